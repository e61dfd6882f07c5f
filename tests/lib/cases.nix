# Table tests of the module's pure core, run offline against the lib AS
# EMBEDDED in modules/agent-box.nix (internal/moduletest). Each case is
# { name; expr; expected; }; expr is compared with == after deep evaluation.
{ lib }:
let
  minimal = {
    enable = true;
    users.alice = { };
  };
  n = lib.normalize minimal;
  failing = cfg: lib.failures cfg;
in
[
  {
    name = "percent is doubled for systemd";
    expr = lib.systemd.escapeSpecifiers "100% %i %%";
    expected = "100%% %%i %%%%";
  }
  {
    name = "Environment= line escapes backslash and quote inside double quotes";
    expr = lib.systemd.environmentLine "K" ''a\b "c" $d %e'';
    expected = ''Environment="K=a\\b \"c\" $d %%e"'' + "\n";
  }
  {
    name = "Environment= line keeps unicode, equals signs and spaces";
    expr = lib.systemd.environmentLine "K" " x=y ☃ ";
    expected = ''Environment="K= x=y ☃ "'' + "\n";
  }
  {
    name = "defaults fill an empty user";
    expr = {
      inherit (n.users.alice)
        memoryHigh
        memoryMax
        tasksMax
        cpuWeight
        sessions
        agentNames
        home
        ;
    };
    expected = {
      memoryHigh = "60%";
      memoryMax = "75%";
      tasksMax = 4096;
      cpuWeight = 100;
      sessions = [ ];
      agentNames = [ "shell" ];
      home = "/home/alice";
    };
  }
  {
    name = "a session without agent or directory gets defaultAgent and the home";
    expr =
      (lib.normalize {
        defaultAgent = "codex";
        users.bob.sessions.s = { };
      }).users.bob.sessions;
    expected = [
      {
        name = "s";
        agent = "codex";
        args = [ ];
        cwd = "/home/bob";
      }
    ];
  }
  {
    name = "user agents are the seed's, the default and the extra ones, sorted and unique";
    expr =
      (lib.normalize {
        users.c = {
          agents = [
            "opencode"
            "shell"
          ];
          sessions.a.agent = "claude";
          sessions.b.agent = "claude";
        };
      }).users.c.agentNames;
    expected = [
      "claude"
      "opencode"
      "shell"
    ];
  }
  {
    name = "a host agent overrides a built-in attribute by attribute";
    expr =
      (lib.normalize {
        agents.claude.args = [ "--x" ];
      }).agents.claude;
    expected = {
      packageAttr = "claude-code";
      command = "claude";
      args = [ "--x" ];
      package = null;
    };
  }
  {
    name = "a host-defined agent has no pkgs attribute";
    expr =
      (lib.normalize {
        agents.mine = {
          package = null;
          command = "mine";
        };
      }).agents.mine;
    expected = {
      packageAttr = null;
      package = null;
      command = "mine";
      args = [ ];
    };
  }
  {
    name = "the minimal configuration passes every assertion";
    expr = failing minimal;
    expected = [ ];
  }
  {
    name = "an unknown option is reported with its path";
    expr = failing { users.alice.memroyMax = "1G"; };
    expected = [ "unknown agent-box options: services.agent-box.users.\"alice\".memroyMax." ];
  }
  {
    name = "an unknown agent names the option and the defined agents";
    expr = failing { users.alice.sessions.s.agent = "nope"; };
    expected = [
      "services.agent-box.users.\"alice\".sessions.\"s\".agent = \"nope\": no such agent; define services.agent-box.agents.\"nope\" or use one of [\"claude\",\"codex\",\"opencode\",\"shell\"]."
    ];
  }
  {
    name = "PATH cannot be set through environment";
    expr = failing { users.alice.environment.PATH = "/bin"; };
    expected = [
      "services.agent-box.users.\"alice\".environment.\"PATH\": PATH, HOME, USER and AGENT_BOX_* are set by agent-box; add programs with services.agent-box.extraPackages instead of PATH."
    ];
  }
  {
    name = "AGENT_BOX_ variables are reserved";
    expr = builtins.length (failing { users.alice.environment.AGENT_BOX_SEED = "/x"; });
    expected = 1;
  }
  {
    name = "a newline in a value is rejected";
    expr = failing { users.alice.environment.X = "a\nb"; };
    expected = [
      "services.agent-box.users.\"alice\".environment.\"X\": the value contains a newline, which a unit file cannot carry; put it in an environmentFiles file or the user's ~/.config/agent-box/env."
    ];
  }
  {
    name = "a bad variable name is rejected";
    expr = builtins.length (failing { users.alice.environment."1X" = "v"; });
    expected = 1;
  }
  {
    name = "invalid user and session names are rejected";
    expr = builtins.length (failing { users."Alice".sessions."a b" = { }; });
    expected = 2;
  }
  {
    name = "relative environment files and working directories are rejected";
    expr = builtins.length (failing {
      users.alice = {
        environmentFiles = [ "secrets.env" ];
        sessions.s.workingDirectory = "src";
      };
    });
    expected = 2;
  }
  {
    name = "an optional environment file may start with -";
    expr = failing { users.alice.environmentFiles = [ "-/run/secrets/x" ]; };
    expected = [ ];
  }
  {
    name = "malformed limits are rejected, sizes percentages and infinity accepted";
    expr = builtins.length (failing {
      users.a = {
        memoryHigh = "lots";
        memoryMax = "1.5G";
        cpuWeight = 0;
        tasksMax = 0;
      };
      users.b = {
        memoryHigh = "512M";
        memoryMax = "infinity";
      };
      users.c.memoryHigh = "12.5%";
      slice.memoryMax = "50";
    });
    expected = 4;
  }
  {
    name = "an undefined default agent is rejected";
    expr = failing { defaultAgent = "x"; };
    expected = [
      "services.agent-box.defaultAgent = \"x\": no such agent; use one of [\"claude\",\"codex\",\"opencode\",\"shell\"]."
    ];
  }
  {
    name = "an agent command with a slash must be absolute";
    expr = builtins.length (failing {
      agents.a = {
        package = null;
        command = "bin/a";
      };
      agents.b = {
        package = null;
        command = "/opt/b";
      };
    });
    expected = 1;
  }
  {
    name = "the agents table resolves names in the environment and keeps absolute commands";
    expr =
      let
        m = lib.normalize {
          agents.abs = {
            package = null;
            command = "/opt/abs";
          };
          users.u.agents = [ "abs" ];
        };
      in
      builtins.fromJSON (lib.agentsTable m m.users.u "/E");
    expected = {
      abs = {
        command = "/opt/abs";
        args = [ ];
      };
      shell = {
        command = "/E/bin/bash";
        args = [ ];
      };
    };
  }
  {
    name = "the seed carries hostile arguments as JSON data";
    expr = builtins.fromJSON (
      lib.seed
        (lib.normalize {
          users.u.sessions.s.args = [
            "%i"
            "\"q\""
            "\\"
            "$(x)"
          ];
        }).users.u
    );
    expected = {
      sessions = [
        {
          name = "s";
          agent = "shell";
          args = [
            "%i"
            "\"q\""
            "\\"
            "$(x)"
          ];
          cwd = "/home/u";
        }
      ];
    };
  }
  {
    name = "null limits render no line";
    expr =
      let
        m = lib.normalize {
          users.u = {
            memoryHigh = null;
            memoryMax = null;
            tasksMax = null;
          };
        };
        text = lib.dropin m.users.u {
          env = "/E";
          seed = "/S";
          agents = "/A";
        } "shell";
      in
      builtins.match ".*(Memory|Tasks).*" text;
    expected = null;
  }
]
