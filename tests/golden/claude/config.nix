# Claude Code, Codex and OpenCode unattended: one agent user whose seed
# session `main` runs the built-in `claude` profile (headless: the default
# permission mode, the managed settings and guide, ~/.claude.json merged),
# `cx` the built-in `codex` profile (the default sandbox and approval
# policy, the system config with the guide and hook, the folder trusted on
# its command line) and `oc` the built-in `opencode` profile (the managed
# config with the guide and plugin, sqlite3 in the environment), each with
# a kickoff prompt that asks for a shell command. The VM tier puts the
# pinned Claude Code, Codex and OpenCode at their zero-hash store paths and
# runs the scripted model on 127.0.0.1:8099 (internal/scriptedmodel);
# Claude's API key file is the harness's fake key (any key works with the
# scripted model); Codex reaches the model as a custom provider (its args),
# without a key; OpenCode as a provider of OPENCODE_CONFIG_CONTENT speaking
# the Messages API, its key taken from the same file's ANTHROPIC_API_KEY.
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
    sessions.oc = {
      agent = "opencode";
      prompt = "run: echo opencode-kickoff > /home/ada/opencode-kickoff.txt";
    };
    environment = {
      ANTHROPIC_BASE_URL = "http://127.0.0.1:8099";
      OPENCODE_CONFIG_CONTENT = builtins.toJSON {
        model = "scripted/claude-x";
        provider.scripted = {
          npm = "@ai-sdk/anthropic";
          name = "Scripted";
          options = {
            baseURL = "http://127.0.0.1:8099/v1";
            apiKey = "{env:ANTHROPIC_API_KEY}";
          };
          models.claude-x.name = "Claude X";
        };
      };
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = "1";
      DISABLE_AUTOUPDATER = "1";
    };
    environmentFiles = [ "/etc/agent-box-demo/ada.claude.env" ];
    agents = [ "shell" ];
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
}
