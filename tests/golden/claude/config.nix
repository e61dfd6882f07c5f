# Claude Code unattended: one agent user whose seed session runs the
# built-in `claude` profile (headless: the default permission mode, the
# managed settings and guide, ~/.claude.json merged) with a kickoff prompt
# that asks for a shell command. The VM tier puts the pinned Claude Code
# at the zero-hash claude-code path and runs the scripted model on
# 127.0.0.1:8099 (internal/scriptedmodel); the API key file is the
# harness's fake key (any key works with the scripted model).
{ pkgs, ... }:
{
  enable = true;
  defaultAgent = "claude";
  users.ada = {
    sessions.main.prompt = "run: echo kickoff > /home/ada/kickoff.txt";
    environment = {
      ANTHROPIC_BASE_URL = "http://127.0.0.1:8099";
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = "1";
      DISABLE_AUTOUPDATER = "1";
    };
    environmentFiles = [ "/etc/agent-box-demo/ada.claude.env" ];
    agents = [ "shell" ];
  };
  guide.extraText = "Guide marker for the tests: the host's own line.";
}
