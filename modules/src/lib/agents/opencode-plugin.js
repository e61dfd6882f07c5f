// Written by agent-box (services.agent-box): reports the conversation
// of a supervised session (docs/runtime-contract.md, "OpenCode").
import { spawn } from "node:child_process";
import { readdirSync, readlinkSync } from "node:fs";

// What the module fills in (lib/agents/opencode.nix, from the contract):
// the agent-box program, the events that report an attention state
// (contract.attention.agentEvents.opencode), the report field of a
// session.error's HTTP status, the variables of the session's name and of
// a resumed session's prompt, and the event whose hook waits for a
// person's decision (contract.approvals.agentEvents.opencode).
const settings = @SETTINGS@;
const runtime = settings.runtime;

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

// The events that report an attention state.
const attention = new Set(settings.attention);

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
const askEvent = settings.askEvent;
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
  const given = process.env[settings.promptVar];
  delete process.env[settings.promptVar];
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
  if (!process.env[settings.sessionVar]) return {};
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
        hook(["event", event.type], { [settings.errorField]: Number.isInteger(code) ? String(code) : "" });
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
