# OpenCode, the built-in agent `opencode`: its profile and its managed
# files (docs/runtime-contract.md, "OpenCode"); what a spawn prepares for
# it is internal/runtime/agentsetup/opencode.go.
#
# The profile: OpenCode chooses its session's id (reported by agent-box's
# plugin in its managed config when the session is created) and resumes it
# with --session; the kickoff prompt is one "--prompt=..." argument (so a
# prompt starting with "-" is not an option). "opencode" setup turns off
# its network fetches for each spawn and resumes only while its database
# holds the session (measured with 1.18.33).
#
# The files, installed when an agent user has an agent with setup =
# "opencode": only what is the
# same for every user of the host. /etc/opencode/opencode.json is OpenCode's
# managed configuration (the highest precedence; measured with 1.18.33): the
# guide as an instructions file (beside, never instead of, a user's
# AGENTS.md), agent-box's plugin, no update and no sharing. The plugin runs
# inside OpenCode: when a top-level session is created it runs
# `agent-box agent-hook opencode session-start` (no shell; its parent is the
# agent itself, conversation.CheckReporter) with the session's id and the
# database OpenCode has open (read from /proc/self/fd: OPENCODE_DB and the
# release channel change its name); on the events of
# contract.attention.agentEvents.opencode of that session (not of a
# subagent's) it runs `agent-box agent-hook opencode event TYPE` with the
# event's status (a retry's with its time, `next`: a long one is the usage
# limit, agentsetup/opencode.go) or an error's HTTP status; the session.idle
# that follows a session.error (measured: OpenCode ends a failed turn with
# both) is not a finished turn, and a person's abort is no error. A
# resumed session's prompt (the resume prompt after a usage limit) comes in
# contract.env.agentPrompt; the plugin sends it through OpenCode's client.
# A permission request's hook waits for a person's decision, which the
# plugin replies to OpenCode (docs/web-contract.md, "Approvals").
# Outside a supervised session it does nothing.
{ contract, prim, ... }:
let
  inherit (contract.conversations) idPlaceholder promptPlaceholder;
  pluginFile = "opencode/agent-box.js";
  guideFile = "opencode/AGENTS.md";
  configFile = "opencode/opencode.json";
  # the plugin's report of a session.error: OpenCode's HTTP status in it
  errorField = contract.attention.agentEvents.opencode.detailFields."session.error";
  # a resumed session's prompt, from exec-session
  promptVar = contract.env.agentPrompt.name;
  # the event whose hook waits for a person's decision
  askEvent = contract.approvals.agentEvents.opencode;

  config = builtins.toJSON {
    autoupdate = false;
    share = "disabled";
    instructions = [ "/etc/${guideFile}" ];
    plugin = [ "file:///etc/${pluginFile}" ];
  };

  # runtime: the absolute path of the agent-box program.
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

    // The events that report an attention state
    // (contract.attention.agentEvents.opencode).
    const attention = new Set(${builtins.toJSON (prim.attentionHooks "opencode")});

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

    // A permission request (contract.approvals.agentEvents.opencode) runs
    // its hook in its turn, so its report comes in order, and lets the
    // queue go on while the hook waits for a person's decision. The hook
    // prints Claude's decision shape, which reply gives OpenCode: allow is
    // "once", allow with the session's rules "always", deny "reject" with
    // the reason (the reply route that takes a message, else the SDK's
    // own call without it). A reply in OpenCode's own prompt
    // (permission.replied) ends the hook's wait.
    const askEvent = ${builtins.toJSON askEvent};
    const asking = new Map(); // OpenCode's request id -> its hook
    function ask(client, p) {
      const command = typeof p.metadata?.command === "string" ? p.metadata.command : "";
      const patterns = Array.isArray(p.patterns) ? p.patterns.filter((x) => typeof x === "string") : [];
      const input = {
        tool_name: typeof p.permission === "string" ? p.permission : "",
        tool_input: command ? { command, patterns } : { patterns },
        permission_suggestions: Array.isArray(p.always) ? p.always : [],
      };
      queue = queue.then(() => {
        const child = spawn(runtime, ["agent-hook", "opencode", "event", askEvent], { stdio: ["pipe", "pipe", "ignore"] });
        asking.set(p.id, child);
        let out = "";
        child.stdout.on("data", (d) => {
          out += d;
        });
        child.on("error", () => asking.delete(p.id));
        child.on("close", () => {
          asking.delete(p.id);
          let d;
          try {
            d = JSON.parse(out).hookSpecificOutput.decision;
          } catch {
            return;
          }
          reply(client, p, d);
        });
        child.stdin.on("error", () => {});
        child.stdin.end(JSON.stringify(input));
      });
    }
    async function reply(client, p, d) {
      const response = d?.behavior === "deny" ? "reject" : d?.behavior === "allow" ? (d.updatedPermissions ? "always" : "once") : null;
      if (!response || !client) return;
      if (typeof d.message === "string" && client._client?.post) {
        try {
          const r = await client._client.post({ url: "/permission/{requestID}/reply", path: { requestID: p.id }, body: { reply: response, message: d.message } });
          if (r?.response?.ok) return;
        } catch {}
      }
      try {
        await client.postSessionIdPermissionsPermissionId({ path: { id: p.sessionID, permissionID: p.id }, body: { response } });
      } catch {}
    }

    // givePrompt sends the prompt exec-session gives a resumed session (its
    // TUI ignores --prompt beside --session) once OpenCode runs, and takes it
    // out of the environment the agent's tools inherit. The client's calls
    // have two shapes (the SDK's second, then its first).
    function givePrompt(client) {
      const given = process.env[${builtins.toJSON promptVar}];
      delete process.env[${builtins.toJSON promptVar}];
      let p;
      try {
        p = JSON.parse(given ?? "null");
      } catch {}
      if (typeof p?.session !== "string" || typeof p?.prompt !== "string" || !client?.session) return;
      const parts = [{ type: "text", text: p.prompt }];
      setTimeout(async () => {
        try {
          const r = await client.session.promptAsync({ sessionID: p.session, parts });
          if (!r?.response?.ok) await client.session.promptAsync({ path: { id: p.session }, body: { parts } });
        } catch {}
      }, 0);
    }

    export const AgentBox = async ({ client } = {}) => {
      if (!process.env[${builtins.toJSON contract.env.session.name}]) return {};
      givePrompt(client);
      const subagents = new Set(); // sessions with a parent: not the session's own
      const failed = new Set(); // sessions whose turn failed, until they work again
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
          if (event.type === askEvent && typeof props.id === "string" && typeof props.sessionID === "string") {
            ask(client, props);
            return;
          }
          if (event.type === "permission.replied") asking.get(props.requestID)?.kill();
          if (event.type === "session.error") {
            // a person's Esc is no failure; an error of no session is not the turn's
            if (props.error?.name === "MessageAbortedError" || typeof props.sessionID !== "string") return;
            failed.add(props.sessionID);
            const code = props.error?.data?.statusCode;
            hook(["event", event.type], { ${builtins.toJSON errorField}: Number.isInteger(code) ? String(code) : "" });
            return;
          }
          const status = typeof props.status === "string" ? props.status : props.status?.type;
          if (status === "busy") failed.delete(props.sessionID);
          // a failed turn ends with session.idle too: its error said it
          if (event.type === "session.idle" && failed.has(props.sessionID)) return;
          const input = { status: typeof status === "string" ? status : "" };
          if (status === "retry" && Number.isFinite(props.status.next)) input.next = Math.round(props.status.next);
          hook(["event", event.type], input);
        },
      };
    };
  '';
in
{
  profile = {
    packageAttr = "opencode";
    command = "opencode";
    args = [ ];
    resumeArgs = [ "--session=${idPlaceholder}" ];
    newArgs = [ ];
    promptArgs = [ "--prompt=${promptPlaceholder}" ];
    setup = "opencode";
  };

  # runtime: the absolute path of the agent-box program; guide: its text.
  files = runtime: guide: {
    ${configFile} = config;
    ${pluginFile} = plugin runtime;
    ${guideFile} = guide;
  };
}
