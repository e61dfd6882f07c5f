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

// The events that report an attention state
// (contract.attention.agentEvents.opencode).
const attention = new Set(["permission.asked","permission.replied","session.idle","session.status"]);

// hook runs agent-box with args and input on stdin (no shell), one at
// a time in the order of the events (a turn's busy and idle come
// milliseconds apart: two hooks at once could report them reversed).
let queue = Promise.resolve();
function hook(args, input) {
  queue = queue.then(
    () =>
      new Promise((done) => {
        const child = spawn(runtime, ["agent-hook", "opencode", ...args], {
          stdio: ["pipe", "ignore", "ignore"],
        });
        child.on("error", done);
        child.on("close", done);
        child.stdin.on("error", () => {});
        child.stdin.end(JSON.stringify(input));
      }),
  );
}

export const AgentBox = async () => {
  if (!process.env["AGENT_BOX_SESSION"]) return {};
  const subagents = new Set(); // sessions with a parent: not the session's own
  return {
    event: async ({ event }) => {
      const props = event.properties ?? {};
      if (event.type === "session.created") {
        const info = props.info;
        if (!info || typeof info.id !== "string") return;
        if (info.parentID) {
          subagents.add(info.id);
          return;
        }
        const db = database();
        if (db) hook(["session-start"], { session_id: info.id, transcript_path: db, source: "startup" });
        return;
      }
      if (!attention.has(event.type) || subagents.has(props.sessionID)) return;
      const status = typeof props.status === "string" ? props.status : props.status?.type;
      hook(["event", event.type], { status: typeof status === "string" ? status : "" });
    },
  };
};
