# OpenCode's managed files (docs/runtime-contract.md, "OpenCode"), installed
# when an agent user has an agent with setup = "opencode": only what is the
# same for every user of the host. /etc/opencode/opencode.json is OpenCode's
# managed configuration (the highest precedence; measured with 1.18.33): the
# guide as an instructions file (beside, never instead of, a user's
# AGENTS.md), agent-box's plugin, no update and no sharing. The plugin runs
# inside OpenCode: when a top-level session is created it runs
# `agent-box agent-hook opencode session-start` (no shell; its parent is the
# agent itself, conversation.CheckReporter) with the session's id and the
# database OpenCode has open (read from /proc/self/fd: OPENCODE_DB and the
# release channel change its name). Outside a supervised session it does
# nothing.
# runtime: the absolute path of the agent-box program.
{ contract, ... }:
let
  pluginFile = "opencode/agent-box.js";
  guideFile = "opencode/AGENTS.md";
in
{
  configFile = "opencode/opencode.json";
  inherit pluginFile guideFile;

  config = builtins.toJSON {
    autoupdate = false;
    share = "disabled";
    instructions = [ "/etc/${guideFile}" ];
    plugin = [ "file:///etc/${pluginFile}" ];
  };

  plugin = runtime: ''
    // Written by agent-box (services.agent-box): reports the conversation
    // of a supervised session (docs/runtime-contract.md, "OpenCode").
    import { spawn } from "node:child_process";
    import { readdirSync, readlinkSync } from "node:fs";

    const runtime = ${builtins.toJSON runtime};

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
      if (!process.env[${builtins.toJSON contract.env.session.name}]) return {};
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
  '';
}
