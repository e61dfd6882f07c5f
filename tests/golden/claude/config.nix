# Claude Code, Codex and OpenCode unattended: one agent user whose seed
# session `main` runs the built-in `claude` profile (headless: the default
# permission mode, the managed settings and guide, ~/.claude.json merged)
# and `cx` the built-in `codex` profile (the default sandbox and approval
# policy, the system config with the guide and hook, the folder trusted on
# its command line), each with a kickoff prompt that asks for a shell
# command; the built-in `opencode` is one of the user's agents (the managed
# config, guide and plugin, sqlite3 in the environment) without a session.
# The VM tier puts the pinned Claude Code and Codex at their zero-hash
# store paths and runs the scripted model on 127.0.0.1:8099
# (internal/scriptedmodel); Claude's API key file is the harness's fake
# key (any key works with the scripted model); Codex reaches the model as
# a custom provider (its args), without a key. OpenCode is too heavy for
# the TCG guests: the host test cmd/agent-box TestOpenCodeUnattended runs
# it with this golden's /etc/opencode files and agents table. Attention:
# silence after output is watched (2 s) for ada's shell sessions. The web
# surface is on for the approvals (below).
{ pkgs, ... }:
{
  enable = true;
  defaultAgent = "claude";
  users.ada = {
    sessions.main.prompt = "run: echo kickoff > /home/ada/kickoff.txt";
    sessions.cx = {
      agent = "codex";
      prompt = "run: echo codex-kickoff > /home/ada/codex-kickoff.txt";
    };
    environment = {
      ANTHROPIC_BASE_URL = "http://127.0.0.1:8099";
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = "1";
      DISABLE_AUTOUPDATER = "1";
    };
    environmentFiles = [ "/etc/agent-box-demo/ada.claude.env" ];
    agents = [
      "shell"
      "opencode"
      "limiter"
      "claude-manual"
    ];
  };
  # Approvals (claude.pre.sh, "approvals"): Claude Code in manual permission
  # mode (an agent's own args come after the host-wide mode's, and Claude
  # takes the last), and the web surface with one login whose notifications
  # carry the action URLs (tests/scenarios/demo-logins, demo-notify); a
  # request waits 20 s for a decision. No fail2ban: this boot tests no
  # failed logins.
  agents.claude-manual = {
    package = pkgs.claude-code;
    command = "claude";
    setup = "claude";
    args = [
      "--permission-mode"
      "manual"
    ];
    newArgs = [
      "--session-id"
      "{id}"
    ];
    resumeArgs = [
      "--resume"
      "{id}"
    ];
    promptArgs = [
      "--"
      "{prompt}"
    ];
  };
  web = {
    enable = true;
    domain = "box.localhost:8443";
    tls = "internal";
    fail2ban.enable = false;
    approvals.wait = "20s";
    logins.ops = {
      hashedPasswordFile = "/etc/agent-box-demo/ops.hash";
      notify.urlFile = "/etc/agent-box-demo/ops.notify";
      users = [ "ada" ];
    };
  };
  # a stand-in agent that reports a usage limit as Claude's hooks do
  # (tests/scenarios/limiter, which claude.pre.sh installs): a dozen limited
  # sessions at the cost of a shell's
  agents.limiter = {
    package = pkgs.bashInteractive;
    command = "/usr/local/bin/agent-box-limiter";
    newArgs = [
      "--session-id"
      "{id}"
    ];
    resumeArgs = [
      "--resume"
      "{id}"
    ];
    promptArgs = [
      "--"
      "{prompt}"
    ];
  };
  agents.codex.args = [
    "-c"
    "model_provider=scripted"
    "-c"
    ''model_providers.scripted={name="scripted model",base_url="http://127.0.0.1:8099/v1",wire_api="responses"}''
    "-m"
    "gpt-5.1"
  ];
  guide.extraText = "Guide marker for the tests: the host's own line.";
  # a shell session that printed and fell silent for 2 s is finished
  attention.silenceAfter = "2s";
  # a session limited by the scripted model's usage limit tries again after
  # 10 s (and up to the contract's jitter), not half an hour; tries 3 s
  # apart, so that a dozen limited sessions resume within a minute
  usageLimits = {
    firstWait = "10s";
    maxWait = "10s";
    perMinute = 20;
  };
}
