# Values systemd, JSON and shells could misread: specifiers, quotes,
# backslashes, dollars, command substitution, unicode. The probe agent
# records its arguments and environment as JSON in the home, then waits, so
# the VM tier can compare them byte for byte.
{ pkgs, ... }:
{
  enable = true;
  agents.probe = {
    package = pkgs.python3;
    command = "python3";
    args = [
      "-c"
      ''
        import json, os, sys, time
        name = os.environ.get("AGENT_BOX_SESSION", "unknown")
        with open(os.path.expanduser("~/probe-" + name + ".json"), "w") as f:
            json.dump({"argv": sys.argv[1:], "env": dict(os.environ), "cwd": os.getcwd()}, f)
        time.sleep(1e9)
      ''
    ];
  };
  users.mallory = {
    sessions."weird_name-1" = {
      agent = "probe";
      args = [
        "%i %h %%"
        "\"double\" 'single'"
        "back\\slash \\n"
        "$HOME \${HOME} $(id) `id`"
        "ünïcødé ☃ 日本"
        "a=b c"
        ""
      ];
      workingDirectory = "/home/mallory";
    };
    sessions.plain = { };
    environment = {
      PERCENT = "100% of %i and %%";
      QUOTES = "say \"hi\" and 'bye'";
      BACKSLASH = "C:\\path\\n\\\"";
      DOLLAR = "$HOME \${HOME} $(id) `id`";
      UNICODE = "ünïcødé ☃ 日本";
      EQUALS = "a=b=c";
      SPACES = "  leading and trailing  ";
      EMPTY = "";
    };
    environmentFiles = [ "-/run/secrets/mallory %i.env" ];
  };
}
