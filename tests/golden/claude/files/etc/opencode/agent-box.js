// Written by agent-box (services.agent-box): reports the conversation
// of a supervised session (docs/runtime-contract.md, "OpenCode").
import { spawn } from "node:child_process";
import { readdirSync, readlinkSync } from "node:fs";

const runtime = "/nix/store/00000000000000000000000000000000-agent-box-runtime/bin/agent-box";

// The database this OpenCode process has open.
function database() {
  for (const fd of readdirSync("/proc/self/fd")) {
    let target;
    try {
      target = readlinkSync("/proc/self/fd/" + fd);
    } catch {
      continue;
    }
    if (/^\/.*\/opencode[^/]*\.db$/.test(target)) return target;
  }
  return null;
}

export const AgentBox = async () => {
  if (!process.env["AGENT_BOX_SESSION"]) return {};
  return {
    event: async ({ event }) => {
      if (event.type !== "session.created") return;
      const info = event.properties?.info;
      if (!info || typeof info.id !== "string" || info.parentID) return; // a subagent's session
      const db = database();
      if (!db) return;
      const hook = spawn(runtime, ["agent-hook", "opencode", "session-start"], {
        stdio: ["pipe", "ignore", "ignore"],
      });
      hook.on("error", () => {});
      hook.stdin.on("error", () => {});
      hook.stdin.end(JSON.stringify({ session_id: info.id, transcript_path: db, source: "startup" }));
    },
  };
};
