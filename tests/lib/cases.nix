# Table tests of the module's option declarations and pure core, run
# offline against both AS EMBEDDED in modules/agent-box.nix, through the
# offline evaluation (tests/lib/offline.nix; internal/purelib runs them).
# A case is { name; expr; expected; } (expr is compared with == after deep
# evaluation) or { name; expr; throws; } (evaluating expr must fail with an
# error containing the text throws).
{ offline }:
let
  inherit (offline) lib pkgs;
  minimal = {
    enable = true;
    users.alice = { };
  };
  n = offline.normalize minimal;
  failing = offline.failures;
  goodHook = {
    secretFile = "/var/lib/secrets/gh.hook";
    session = "main";
  };
  # Where the renderers find things (units.nix's host), with short paths.
  testHost = {
    pathsOf = _: {
      env = "/E";
      seed = "/S";
      agents = "/A";
    };
    authEnv = "/AE";
    authConfig = "/AC";
    webFile = name: "/W/${name}";
    caddyGroup = "caddy";
    nft = "/N/bin/nft";
    nftables = true;
  };
  # How many assertions fail for alice's hook gh = goodHook // h.
  hookFailures =
    h:
    builtins.length (
      failing (
        webWith { }
        // {
          users.alice.webhooks.gh = goodHook // h;
        }
      )
    );
  # alice, and a web surface with one login opening her; w overrides web.
  webWith = w: {
    users.alice = { };
    web = {
      enable = true;
      domain = "box.example.com";
      logins.ops = {
        hashedPasswordFile = "/var/lib/secrets/ops.hash";
        users = [ "alice" ];
      };
    }
    // w
    // {
      logins = builtins.mapAttrs (
        name: l:
        {
          hashedPasswordFile = "/var/lib/secrets/${name}.hash";
          users = [ "alice" ];
        }
        // l
      ) (w.logins or { ops.users = [ "alice" ]; });
    };
  };
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
        diskQuota
        sessions
        agentNames
        home
        ;
    };
    expected = {
      memoryHigh = null;
      memoryMax = "75%";
      tasksMax = 4096;
      cpuWeight = 100;
      diskQuota = null;
      sessions = [ ];
      agentNames = [ "shell" ];
      home = "/home/alice";
    };
  }
  {
    name = "a session without agent or directory gets defaultAgent and the home";
    expr =
      (offline.normalize {
        defaultAgent = "codex";
        users.bob.sessions.s = { };
      }).users.bob.sessions;
    expected = [
      {
        name = "s";
        agent = "codex";
        args = [ ];
        cwd = "/home/bob";
        prompt = null;
      }
    ];
  }
  {
    name = "user agents are the seed's, the default and the extra ones, sorted and unique";
    expr =
      (offline.normalize {
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
      (offline.normalize {
        agents.claude.args = [ "--x" ];
      }).agents.claude;
    expected = {
      package = pkgs.claude-code;
      command = "claude";
      args = [ "--x" ];
      # the conversation attributes keep the built-in's
      resumeArgs = [
        "--resume"
        "{id}"
      ];
      newArgs = [
        "--session-id"
        "{id}"
      ];
      promptArgs = [
        "--"
        "{prompt}"
      ];
      setup = "claude";
    };
  }
  {
    name = "every built-in agent exists beside a host-defined one";
    expr = builtins.attrNames
      (offline.normalize {
        agents.mine = {
          package = pkgs.git;
          command = "mine";
        };
      }).agents;
    expected = [
      "claude"
      "codex"
      "mine"
      "opencode"
      "shell"
    ];
  }
  {
    name = "a host-defined agent gets no arguments by default";
    expr =
      (offline.normalize {
        agents.mine = {
          package = pkgs.git;
          command = "mine";
        };
      }).agents.mine;
    expected = {
      package = pkgs.git;
      command = "mine";
      args = [ ];
      resumeArgs = [ ];
      newArgs = [ ];
      promptArgs = [ ];
      setup = null;
    };
  }
  {
    name = "a host-defined agent must name its package";
    expr = (offline.normalize { agents.mine.command = "mine"; }).agents.mine.package;
    throws = "The option `services.agent-box.agents.mine.package' was accessed but has no value defined.";
  }
  {
    name = "the runtime package defaults to the embedded build";
    expr = (offline.eval { }).package;
    expected = pkgs.agent-box;
  }
  {
    name = "the module is off unless enabled";
    expr = (offline.eval { }).enable;
    expected = false;
  }
  {
    name = "the minimal configuration passes every assertion";
    expr = failing minimal;
    expected = [ ];
  }
  {
    name = "an unknown option is an error naming its path";
    expr = failing { users.alice.memroyMax = "1G"; };
    throws = "The option `services.agent-box.users.alice.memroyMax' does not exist.";
  }
  {
    name = "a value of the wrong type is an error naming the option and the type";
    expr = failing { users.alice.tasksMax = "many"; };
    throws = "A definition for option `services.agent-box.users.alice.tasksMax' is not of type `null or signed integer'.";
  }
  {
    name = "a list of the wrong element type is an error";
    expr = (offline.eval { extraPackages = [ "git" ]; }).extraPackages;
    throws = "is not of type `package'.";
  }
  {
    name = "an unknown agent names the option and the defined agents";
    expr = failing { users.alice.sessions.s.agent = "nope"; };
    expected = [
      "services.agent-box.users.\"alice\".sessions.\"s\".agent = \"nope\": no such agent; define services.agent-box.agents.\"nope\" or use one of [\"claude\",\"codex\",\"opencode\",\"shell\"]."
    ];
  }
  {
    name = "an agent whose resumeArgs do not name the conversation is refused";
    expr = failing { agents.claude.resumeArgs = [ "--resume" ]; };
    expected = [
      "services.agent-box.agents.\"claude\".resumeArgs = [\"--resume\"]: name the conversation as {id} (for example [ \"--resume\" \"{id}\" ]), or use [ ] for an agent that does not resume."
    ];
  }
  {
    name = "an agent whose promptArgs do not carry the prompt is refused";
    expr = builtins.length (failing { agents.claude.promptArgs = [ "--prompt" ]; });
    expected = 1;
  }
  {
    name = "a Claude Code older than the claude setup's minimum is refused, naming both versions";
    expr = failing { agents.claude.package = pkgs.claude-code // { version = "2.0.9"; }; };
    expected = [
      "services.agent-box.agents.\"claude\".package is Claude Code 2.0.9; the \"claude\" setup needs 2.1.0 or newer (its --permission-mode, --session-id and --resume, and the managed-settings.d directory): use a newer claude-code, or set services.agent-box.agents.\"claude\".setup = null and its resumeArgs, newArgs and promptArgs to [ ] to run it bare."
    ];
  }
  {
    name = "the measured Claude Code passes the version check";
    expr = failing { agents.claude.package = pkgs.claude-code // { version = "2.1.328"; }; };
    expected = [ ];
  }
  {
    name = "a kickoff prompt over the contract's limit is refused";
    expr = builtins.length (
      failing {
        users.alice.sessions.s.prompt = builtins.concatStringsSep "" (builtins.genList (_: "0123456789abcdef") 4097);
      }
    );
    expected = 1;
  }
  {
    name = "seed sessions within each limit but over the seed file's 1 MiB together are refused, with the seed's size";
    expr =
      let
        # two arguments that take the session's whole 256 KiB as execve
        # counts them; each seed entry is then 262190 bytes of JSON
        # ({"agent":"shell","args":[...],"cwd":"/home/alice","name":"sN"}),
        # five with commas, brackets and newline 1310970
        big = builtins.concatStringsSep "" (builtins.genList (_: "0123456789abcdef") 8191);
        # 131071 + 131055 bytes: (131071 + 9) + (131055 + 9) = 262144
        args = [
          (big + "0123456789abcde")
          (builtins.substring 0 131055 big)
        ];
      in
      failing {
        users.alice.sessions = builtins.listToAttrs (
          builtins.genList (i: {
            name = "s${toString i}";
            value = { inherit args; };
          }) 5
        );
      };
    expected = [
      "services.agent-box.users.\"alice\".sessions: the seed file is 1310970 bytes: at most 1048576; shorten the prompts and arguments, or add sessions at run time."
    ];
  }
  {
    name = "every assertion message evaluates, also for the checks that pass (a session without a prompt)";
    expr = builtins.length (
      builtins.filter builtins.isString (
        offline.messages {
          users.alice.sessions.s = { };
          users.alice.environment.X = "y";
          users.alice.environmentFiles = [ "/r" ];
        }
      )
    );
    expected = builtins.length (
      offline.messages {
        users.alice.sessions.s = { };
        users.alice.environment.X = "y";
        users.alice.environmentFiles = [ "/r" ];
      }
    );
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
        package = pkgs.coreutils;
        command = "bin/a";
      };
      agents.b = {
        package = pkgs.coreutils;
        command = "/opt/b";
      };
    });
    expected = 1;
  }
  {
    name = "the agents table resolves names in the environment and keeps absolute commands";
    expr =
      let
        m = offline.normalize {
          agents.abs = {
            package = pkgs.coreutils;
            command = "/opt/abs";
          };
          users.u.agents = [ "abs" ];
        };
      in
      builtins.fromJSON (lib.render.agentsTable m m.users.u "/E");
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
      lib.render.seed
        (offline.normalize {
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
        m = offline.normalize {
          users.u = {
            memoryHigh = null;
            memoryMax = null;
            tasksMax = null;
          };
        };
        text = lib.render.slice.user m.users.u;
      in
      builtins.match ".*(Memory|Tasks).*" text;
    expected = null;
  }
  {
    name = "the limits are the user's slice's, but MemoryHigh is the agents' and their tasks are the slice's less the reserve";
    expr =
      let
        m = offline.normalize {
          users.u = {
            tasksMax = 1000;
            memoryHigh = "3G";
            memoryMax = "4G";
          };
        };
        p = {
          env = "/E";
          seed = "/S";
          agents = "/A";
        };
        limits = text: {
          high = builtins.match ".*\nMemoryHigh=([^\n]+)\n.*" text;
          max = builtins.match ".*\nMemoryMax=([^\n]+)\n.*" text;
          tasks = builtins.match ".*\nTasksMax=([0-9]+)\n.*" text;
        };
      in
      map limits [
        (lib.render.slice.user m.users.u)
        (lib.render.instance m.users.u p m)
        (lib.render.sessions m.users.u p)
      ];
    # 64: the contract's userTasks.reserve, kept for the supervisor, the
    # web daemon and the terminal
    expected = [
      {
        high = null;
        max = [ "4G" ];
        tasks = [ "1000" ];
      }
      {
        high = null;
        max = null;
        tasks = null;
      }
      {
        high = [ "3G" ];
        max = null;
        tasks = [ "936" ];
      }
    ];
  }
  {
    name = "a MemoryHigh of the box's slice is refused";
    expr = failing {
      slice.memoryHigh = "80%";
      slice.memoryMax = "90%";
    };
    expected = [
      "services.agent-box.slice.memoryHigh = \"80%\": a MemoryHigh of the box's slice throttles every user's supervisor and tmux server, not the agent that uses the memory; remove it and set services.agent-box.slice.memoryMax, at which the kernel kills that agent."
    ];
  }
  {
    name = "a user's tasksMax must leave the agents at least the reserve";
    expr = failing {
      users.a.tasksMax = 127;
      users.b.tasksMax = 128;
    };
    expected = [
      "services.agent-box.users.\"a\".tasksMax = 127: agent-box keeps 64 of a user's tasks from its agents for the user's supervisor, web daemon and terminal; use at least 128 or null."
    ];
  }
  {
    name = "the usage limits' settings reach the supervisor only where they differ from the contract's";
    expr =
      let
        lines =
          cfg:
          let
            m = offline.normalize cfg;
            text = lib.render.instance m.users.u {
              env = "/E";
              seed = "/S";
              agents = "/A";
            } m;
          in
          builtins.filter (l: builtins.isString l && builtins.match ".*AGENT_BOX_(RESUME|LIMIT)_.*" l != null) (builtins.split "\n" text);
      in
      {
        defaults = lines { users.u = { }; };
        same = lines {
          users.u = { };
          usageLimits.growth = 2;
        };
        set = lines {
          users.u = { };
          usageLimits = {
            resumePrompt = "Go on: it's 100% reset";
            firstWait = "5h";
            growth = 1;
            maxWait = "5h";
            perMinute = 1;
          };
        };
      };
    expected = {
      defaults = [ ];
      same = [ ];
      set = [
        ''Environment="AGENT_BOX_RESUME_PROMPT=Go on: it's 100%% reset"''
        ''Environment="AGENT_BOX_LIMIT_FIRST_WAIT=5h"''
        ''Environment="AGENT_BOX_LIMIT_GROWTH=1"''
        ''Environment="AGENT_BOX_LIMIT_MAX_WAIT=5h"''
        ''Environment="AGENT_BOX_LIMIT_PER_MINUTE=1"''
      ];
    };
  }
  {
    name = "a usage limits' schedule that cannot work is refused";
    expr = failing {
      usageLimits = {
        firstWait = "3h";
        maxWait = "2h";
        growth = 0;
        resumePrompt = "two\nlines";
      };
    };
    expected = [
      "services.agent-box.usageLimits.maxWait = \"2h\": use a Go duration such as \"2h\", at least firstWait (3h)."
      "services.agent-box.usageLimits: growth (0) and perMinute (4) must be at least 1."
      "services.agent-box.usageLimits.resumePrompt: use one line of at most 65536 bytes."
    ];
  }
  {
    name = "a disk quota is a size in M, G or T";
    expr = failing {
      users.a.diskQuota = "20GB";
      users.b.diskQuota = "1.5G";
      users.c.diskQuota = "0G";
      users.d.diskQuota = "20G";
      users.e.diskQuota = "512M";
      users.f.diskQuota = "2T";
    };
    expected =
      let
        refused = u: v: "services.agent-box.users.\"${u}\".diskQuota = \"${v}\": use a size such as \"20G\" ([1-9][0-9]{0,5}[MGT]: M, G or T, powers of 1024) or null.";
      in
      [
        (refused "a" "20GB")
        (refused "b" "1.5G")
        (refused "c" "0G")
      ];
  }
  {
    name = "a user with a disk quota gets its enabled unit, which sets it at start and clears it at stop";
    expr =
      let
        d = lib.dropins
          (offline.normalize {
            users.a.diskQuota = "20G";
            users.b = { };
          })
          {
            pathsOf = _: {
              env = "/E";
              seed = "/S";
              agents = "/A";
            };
          };
      in
      {
        units = builtins.filter (u: builtins.match "agent-box-disk@.*" u != null) (builtins.attrNames d);
        inherit (d."agent-box-disk@a.service") wantedBy;
        service = builtins.filter (l: builtins.isString l && builtins.match "(Exec|ReadWrite).*" l != null) (
          builtins.split "\n" d."agent-box-disk@a.service".text
        );
      };
    expected = {
      units = [ "agent-box-disk@a.service" ];
      wantedBy = [ "multi-user.target" ];
      service = [
        "ExecStart="
        "ExecStart=/E/bin/agent-box disk set a 20G"
        "ExecStop="
        "ExecStop=/E/bin/agent-box disk clear a"
        "ReadWritePaths=-/var/lib/agent-box-apps/a"
      ];
    };
  }
  {
    name = "the home check names the option and the fix";
    expr = lib.homeMessage "alice" "/srv/alice";
    expected = "services.agent-box.users.alice: users.users.alice.home is /srv/alice, but agent-box@.service uses /home/alice; remove the home override.";
  }
  {
    name = "every supervisor is enabled; the sessions units (pulled in by it) and the slices are not";
    expr = builtins.mapAttrs (_: d: d.wantedBy) (
      lib.dropins
        (offline.normalize {
          users.a = { };
          users.b = { };
        })
        {
          pathsOf = _: {
            env = "/E";
            seed = "/S";
            agents = "/A";
          };
        }
    );
    expected = {
      "agent-box.slice" = [ ];
      "agent-box-a.slice" = [ ];
      "agent-box-b.slice" = [ ];
      "agent-box-sessions@a.service" = [ ];
      "agent-box-sessions@b.service" = [ ];
      "agent-box@a.service" = [ "multi-user.target" ];
      "agent-box@b.service" = [ "multi-user.target" ];
    };
  }
  {
    # nixpkgs' switch-to-configuration-ng reads X-RestartIfChanged and
    # X-StopIfChanged from [Service] (handle_modified_unit), not from [Unit].
    name = "the switch keys are in [Service]: the sessions unit is never restarted, the supervisor restarted";
    expr =
      let
        m = offline.normalize { users.u = { }; };
        p = {
          env = "/E";
          seed = "/S";
          agents = "/A";
        };
        inService = key: text: builtins.match ".*\n\\[Service]\n(#[^\n]*\n)*${key}=false\n.*" ("\n" + text) != null;
      in
      {
        sessions = inService "X-RestartIfChanged" (lib.render.sessions m.users.u p);
        supervisor = inService "X-StopIfChanged" (lib.render.instance m.users.u p m);
        supervisorRestarts = builtins.match ".*X-RestartIfChanged.*" (lib.render.instance m.users.u p m) == null;
      };
    expected = {
      sessions = true;
      supervisor = true;
      supervisorRestarts = true;
    };
  }
  {
    name = "a user's '-' is escaped in the slice's name, so bob-x's slice is not a child of bob's";
    expr =
      let
        d =
          lib.dropins
            (offline.normalize {
              users.bob = { };
              users.bob-x = { };
            })
            {
              pathsOf = _: {
                env = "/E";
                seed = "/S";
                agents = "/A";
              };
            };
        sliceOf = unit: builtins.head (builtins.match ".*\nSlice=([^\n]*)\n.*" d.${unit}.text);
      in
      {
        slices = builtins.filter (n: builtins.match ".*\\.slice" n != null) (builtins.attrNames d);
        supervisor = sliceOf "agent-box@bob-x.service";
        sessions = sliceOf "agent-box-sessions@bob-x.service";
      };
    expected = {
      slices = [
        "agent-box-bob.slice"
        "agent-box-bob\\x2dx.slice"
        "agent-box.slice"
      ];
      supervisor = "agent-box-bob\\x2dx.slice";
      sessions = "agent-box-bob\\x2dx.slice";
    };
  }
  {
    name = "the web surface needs a login, and a login needs users";
    expr = failing {
      users.alice = { };
      web = {
        enable = true;
        domain = "box.example.com";
        logins = { };
      };
    };
    expected = [
      "services.agent-box.web.logins is empty: define at least one login (a person) with the agent users it may open."
    ];
  }
  {
    name = "a login may only open defined agent users";
    expr = failing (webWith { logins.ops.users = [ "alice" "zed" ]; });
    expected = [
      "services.agent-box.web.logins names the agent user \"zed\", which services.agent-box.users does not define."
    ];
  }
  {
    name = "an agent user in Caddy's group is refused";
    expr = failing (webWith { } // { users.alice.extraGroups = [ "caddy" ]; });
    expected = [
      "services.agent-box.users.\"alice\".extraGroups contains \"caddy\", Caddy's group: that user could connect to every socket Caddy may dial (every user's web daemon, the auth service). Remove it."
    ];
  }
  {
    name = "a password hash in the Nix store is refused";
    expr = builtins.length (failing (webWith { logins.ops.hashedPasswordFile = "/nix/store/x-ops.hash"; }));
    expected = 1;
  }
  {
    name = "a notify URL file in the Nix store is refused";
    expr = failing (webWith { logins.ops.notify.urlFile = "/nix/store/x-ops.notify"; });
    expected = [
      "services.agent-box.web.logins.\"ops\".notify.urlFile = \"/nix/store/x-ops.notify\": use an absolute path outside the Nix store (a root-only file: the URL holds its token; the store is world-readable), without ':'."
    ];
  }
  {
    name = "only a login with a notify URL brings the notify unit, its socket and the auth service's feed group";
    expr =
      let
        dropins = w: lib.dropins (offline.normalize (webWith w)) testHost;
        plain = dropins { };
        notifying = dropins { logins.ops.notify.urlFile = "/var/lib/secrets/ops.notify"; };
        grouped =
          d: builtins.length (builtins.split "\nSupplementaryGroups=agent-box-notify-feed\n" d."agent-box-auth.service".text) > 1;
      in
      [
        (plain ? "agent-box-notify.service")
        (plain ? "agent-box-notify.socket")
        (grouped plain)
        (notifying ? "agent-box-notify.service")
        (notifying ? "agent-box-notify.socket")
        (grouped notifying)
      ];
    expected = [
      false
      false
      false
      true
      true
      true
    ];
  }
  {
    name = "only the supervisor and web daemon of a user with an origin carry the status socket's group";
    expr =
      let
        d =
          lib.dropins (offline.normalize (webWith { } // { users = { alice = { }; bob = { }; }; })) testHost;
        grouped =
          unit:
          builtins.length (
            builtins.split "\nSupplementaryGroups=${lib.contract.sockets.authStatus.group}\n" d.${unit}.text
          ) > 1;
      in
      {
        alice = map grouped [
          "agent-box@alice.service"
          "agent-box-web@alice.service"
          "agent-box-sessions@alice.service"
          "agent-box-term@alice.service"
        ];
        bob = grouped "agent-box@bob.service";
        withoutWeb = builtins.length (
          builtins.split "SupplementaryGroups" (lib.dropins (offline.normalize { users.alice = { }; }) testHost)."agent-box@alice.service".text
        ) > 1;
      };
    expected = {
      alice = [
        true
        true
        false
        false
      ];
      bob = false;
      withoutWeb = false;
    };
  }
  {
    name = "the agents' table names every agent user (an origin or not) and the web port; it loads with the web surface only";
    expr =
      let
        n = offline.normalize (webWith { domain = "box.example.com:9443"; } // { users = { alice = { }; carol = { }; }; });
        rules = (lib.web.storeTexts n)."${lib.contract.web.agentsClient.table}.nft";
        has = s: builtins.length (builtins.split s rules) > 1;
      in
      {
        users = has ''meta skuid \{ "alice", "carol" } tcp dport 9443 snat ip to ${lib.contract.web.agentsClient.address}'';
        v6 = has ''meta nfproto ipv6 oifname "lo" meta skuid \{ "alice", "carol" } tcp dport 9443 reject with tcp reset'';
        unit = (lib.dropins n testHost) ? ${lib.contract.units.clients};
        withoutWeb = (lib.dropins (offline.normalize minimal) testHost) ? ${lib.contract.units.clients};
      };
    expected = {
      users = true;
      v6 = true;
      unit = true;
      withoutWeb = false;
    };
  }
  {
    # systemd-escape --path --suffix=mount /run/agent-box/bob-x (systemd 252):
    # run-agent\x2dbox-bob\x2dx.mount
    name = "each user's runtime directory is a tmpfs of its own: a mount unit named as systemd escapes its path";
    expr =
      let
        m = lib.mounts (offline.normalize { users = { alice = { }; "bob-x" = { }; a_b = { }; }; });
      in
      {
        names = builtins.attrNames m;
        where = builtins.length (builtins.split "\nWhere=/run/agent-box/bob-x\n" m."run-agent\\x2dbox-bob\\x2dx.mount") > 1;
      };
    expected = {
      names = [
        "run-agent\\x2dbox-a_b.mount"
        "run-agent\\x2dbox-alice.mount"
        "run-agent\\x2dbox-bob\\x2dx.mount"
      ];
      where = true;
    };
  }
  {
    name = "a bad domain, login name or duration is refused";
    expr = builtins.length (failing (
      webWith {
        domain = "Box.Example.com/x";
        sessionLifetime = "a week";
        logins."Ops".users = [ "alice" ];
        logins."Ops".hashedPasswordFile = "/etc/x";
      }
    ));
    expected = 3;
  }
  {
    # Which values are accepted: the contract's shared case table
    # (contract-cases.json, internal/contractcases); here the message.
    name = "a terminal check interval out of the contract's bounds is refused, naming the option and the bounds";
    expr = failing (webWith { terminalCheckInterval = "1h"; });
    expected =
      let
        iv = lib.contract.web.terminalCheckInterval;
      in
      [
        "services.agent-box.web.terminalCheckInterval = \"1h\": use a Go duration from ${iv.min} to ${iv.max}, such as \"${iv.default}\"."
      ];
  }
  {
    name = "the domain's port is the origins' port; 443 when absent";
    expr = map (d: (offline.normalize (webWith { domain = d; })).web.port) [
      "box.localhost:8443"
      "box.example.com"
    ];
    expected = [
      8443
      443
    ];
  }
  {
    name = "only users some login may open get a web origin";
    expr = builtins.attrNames (
      lib.dropins (offline.normalize (webWith { } // { users = { alice = { }; bob = { }; }; })) testHost
    );
    expected = [
      "agent-box-alice.slice"
      "agent-box-auth-control.socket"
      "agent-box-auth-pages.socket"
      "agent-box-auth-status.socket"
      "agent-box-auth-verify.socket"
      "agent-box-auth.service"
      "agent-box-bob.slice"
      "agent-box-clients.service"
      "agent-box-sessions@alice.service"
      "agent-box-sessions@bob.service"
      "agent-box-term@alice.service"
      "agent-box-web@alice.service"
      "agent-box-web@alice.socket"
      "agent-box.slice"
      "agent-box@alice.service"
      "agent-box@bob.service"
    ];
  }
  {
    name = "a webhook needs the web surface and a login that opens its user";
    expr =
      failing {
        users.alice.webhooks.gh = goodHook;
      }
      ++ failing (
        webWith { }
        // {
          users = {
            alice = { };
            bob.webhooks.gh = goodHook;
          };
        }
      );
    expected = [
      "services.agent-box.users.\"alice\".webhooks: webhooks are served by the web surface, on the box origin: set services.agent-box.web.enable = true and name \"alice\" in the users of a login under services.agent-box.web.logins."
      "services.agent-box.users.\"bob\".webhooks: webhooks are served by the web surface, on the box origin: set services.agent-box.web.enable = true and name \"bob\" in the users of a login under services.agent-box.web.logins."
    ];
  }
  {
    name = "each mistake in a webhook is refused with its own message";
    expr = map (m: builtins.head (builtins.split ":" m)) (
      failing (
        webWith { }
        // {
          users.alice.webhooks = {
            "GH!" = goodHook;
            store = goodHook // {
              secretFile = "/nix/store/x-gh.hook";
            };
            session = goodHook // {
              session = "a b";
            };
            notify = goodHook // {
              notify = "line\nnext";
            };
            body = goodHook // {
              maxBodySize = 0;
            };
            quota = goodHook // {
              quota = 1000;
              maxBodySize = 1000;
            };
            retention = goodHook // {
              retention = "30s";
            };
          };
        }
      )
    );
    expected = [
      "services.agent-box.users.\"alice\".webhooks.\"GH!\""
      "services.agent-box.users.\"alice\".webhooks.\"body\".maxBodySize = 0"
      "services.agent-box.users.\"alice\".webhooks.\"notify\".notify"
      "services.agent-box.users.\"alice\".webhooks.\"quota\".quota = 1000"
      "services.agent-box.users.\"alice\".webhooks.\"retention\".retention = \"30s\""
      "services.agent-box.users.\"alice\".webhooks.\"session\".session = \"a b\""
      "services.agent-box.users.\"alice\".webhooks.\"store\".secretFile = \"/nix/store/x-gh.hook\""
    ];
  }
  {
    name = "a webhook's retention is a Go duration of at least a minute, however it is written";
    expr = map (r: hookFailures { retention = r; }) [
      "168h"
      "90s"
      "1h30m"
      "0.5h"
      "007m"
      "60000ms"
      "59s"
      "0m"
      "0.5m"
      "30s1ms"
      "7d"
      ""
    ];
    expected = [
      0
      0
      0
      0
      0
      0
      1
      1
      1
      1
      1
      1
    ];
  }
  {
    name = "a webhook's quota must hold a delivery of the largest size";
    expr = map (
      q:
      hookFailures {
        maxBodySize = 1000;
        quota = q;
      }
    ) [ 67536 67535 ];
    expected = [
      0
      1
    ];
  }
  {
    name = "a user with webhooks gets a hook socket, and the secret reaches the web daemon only as a credential";
    expr =
      let
        d = lib.dropins (offline.normalize (webWith { } // { users.alice.webhooks.gh = goodHook; })) testHost;
        text = d."agent-box-web@alice.service".text;
        contains = needle: hay: builtins.replaceStrings [ needle ] [ "" ] hay != hay;
      in
      {
        socket = d."agent-box-hook@alice.socket".wantedBy;
        credential = contains "\nLoadCredential=hook-gh:/var/lib/secrets/gh.hook\n" text;
        config = contains "\nEnvironment=\"AGENT_BOX_HOOKS=/W/agent-box-hooks-alice.json\"\n" text;
        secretElsewhere = contains "gh.hook" (builtins.replaceStrings [ "LoadCredential=hook-gh:/var/lib/secrets/gh.hook" ] [ "" ] text);
      };
    expected = {
      socket = [ "sockets.target" ];
      credential = true;
      config = true;
      secretElsewhere = false;
    };
  }
  {
    name = "a web option of the wrong type is an error";
    expr = (offline.eval (webWith { tls = "letsencrypt"; })).web.tls;
    throws = "A definition for option `services.agent-box.web.tls' is not of type `one of \"acme\", \"internal\"'.";
  }
  {
    name = "an agent user with a web origin must be a host name label";
    expr = failing (
      webWith { logins.ops.users = [ "al_ice" ]; } // { users.al_ice = { }; }
    );
    expected = [
      "services.agent-box.web.logins opens the agent user \"al_ice\", whose name cannot be a host name label (its origin is al_ice.box.example.com): start with a letter, then lowercase letters, digits and inner '-' (at most 32)."
    ];
  }
  {
    name = "fail2ban is on with the web surface, and off without it";
    expr = map (c: (offline.normalize c).web.fail2ban.enable) [
      (webWith { })
      (webWith { fail2ban.enable = false; })
      { users.alice = { }; }
    ];
    expected = [
      true
      false
      false
    ];
  }
  {
    name = "fail2ban's jail bans the domain's port, or http and https on 443";
    expr = map (d: builtins.match ".*\nport = ([^\n]*)\n.*" (lib.render.fail2ban.jail (offline.normalize (webWith { domain = d; })).web true)) [
      "box.localhost:8443"
      "box.example.com"
    ];
    expected = [
      [ "8443" ]
      [ "http,https" ]
    ];
  }
  {
    name = "without fail2ban no fail2ban file is installed";
    expr = builtins.attrNames (
      lib.etcFiles (offline.normalize (webWith { fail2ban.enable = false; })) {
        pathsOf = _: {
          env = "/E";
          seed = "/S";
          agents = "/A";
        };
      }
    );
    expected = [
      "agent-box/users/alice.env"
      "sysctl.d/60-agent-box.conf"
      "tmpfiles.d/agent-box-apps.conf"
    ];
  }
  {
    name = "the jail bans a /64 through the module's nftables action with nftables, through the default action with iptables";
    expr =
      map
        (nftables: {
          files = builtins.filter (f: builtins.substring 0 9 f == "fail2ban/") (
            builtins.attrNames (lib.etcFiles (offline.normalize (webWith { })) (testHost // { inherit nftables; }))
          );
          banaction = builtins.match ".*\nbanaction = ([^\n]*)\n.*" (
            lib.render.fail2ban.jail (offline.normalize (webWith { })).web nftables
          );
        })
        [
          true
          false
        ];
    expected = [
      {
        files = [
          "fail2ban/action.d/agent-box-nftables.local"
          "fail2ban/filter.d/agent-box-auth.local"
          "fail2ban/jail.d/agent-box-auth.local"
        ];
        banaction = [ "agent-box-nftables" ];
      }
      {
        files = [
          "fail2ban/filter.d/agent-box-auth.local"
          "fail2ban/jail.d/agent-box-auth.local"
        ];
        banaction = null;
      }
    ];
  }
  {
    name = "ptraceScope is 1 by default, written to sysctl.d with the web surface only; null writes nothing";
    expr =
      map
        (
          c:
          (lib.etcFiles (offline.normalize c) testHost)."sysctl.d/60-agent-box.conf" or null
        )
        [
          (webWith { })
          (webWith { ptraceScope = 2; })
          (webWith { ptraceScope = null; })
          { users.alice = { }; }
        ];
    expected = [
      "# Generated by the agent-box NixOS module: no process traces one it did not start (services.agent-box.web.ptraceScope).\nkernel.yama.ptrace_scope = 1\n"
      "# Generated by the agent-box NixOS module: no process traces one it did not start (services.agent-box.web.ptraceScope).\nkernel.yama.ptrace_scope = 2\n"
      null
      null
    ];
  }
  {
    name = "a ptraceScope of 0 or over 3 is refused, naming the option";
    expr = map (v: failing (webWith { ptraceScope = v; })) [
      0
      4
    ];
    expected = [
      [
        "services.agent-box.web.ptraceScope = 0: use 1, 2 or 3 (or null to leave kernel.yama.ptrace_scope to the host). At 0 an agent can attach to its own ttyd and web daemon and serve its page in the operator's terminal."
      ]
      [
        "services.agent-box.web.ptraceScope = 4: use 1, 2 or 3 (or null to leave kernel.yama.ptrace_scope to the host). At 0 an agent can attach to its own ttyd and web daemon and serve its page in the operator's terminal."
      ]
    ];
  }
  {
    name = "Caddy passes the auth service only the box's own cookies, named by the runtime's contract";
    expr =
      let
        sites = (lib.web.storeTexts (offline.normalize (webWith { })))."agent-box-caddy-sites.caddy";
        lines = builtins.filter (l: builtins.isString l && builtins.match ".*header_up Cookie.*" l != null) (
          builtins.split "\n" sites
        );
      in
      map (l: builtins.head (builtins.match "[[:space:]]*(.*)" l)) lines;
    expected = [
      "header_up Cookie \"(?:^|;) *(?:(__Host-agentbox=[^;]*)|[^;]*)\" \";$1\""
      "header_up Cookie \"(?:^|;) *(?:(__Host-agentbox=[^;]*)|(__Host-agentbox-bind=[^;]*)|[^;]*)\" \";$1$2\""
      "header_up Cookie \"(?:^|;) *(?:(__Host-agentbox=[^;]*)|[^;]*)\" \";$1\""
    ];
  }
  {
    name = "a bad fail2ban count or time is refused, naming the option";
    expr = failing (webWith {
      fail2ban = {
        maxretry = 0;
        findtime = "ten minutes";
        bantime = "1h30m";
      };
    });
    expected = [
      "services.agent-box.web.fail2ban.maxretry = 0: use 1 or more (failed logins that ban an address)."
      "services.agent-box.web.fail2ban.findtime = \"ten minutes\": use a fail2ban time such as \"10m\", \"1h\" or \"1d\" (a number with s, m, h, d or w; plain seconds)."
    ];
  }
  {
    name = "an app waits for the first relative path of its command, in its directory, unless told otherwise";
    expr =
      let
        waits =
          apps:
          map (a: a.waitFor)
            (offline.normalize {
              users.alice.apps = apps;
            }).users.alice.apps;
      in
      waits {
        a = {
          command = [
            "python3"
            "app.py"
          ];
        };
        b = {
          command = [
            "./server"
            "--port"
            "8080"
          ];
        };
        c.command = [
          "python3"
          "-u"
          "bin/app.py"
        ];
        d.command = [ "/run/current-system/sw/bin/true" ];
        e = {
          command = [ "anything" ];
          waitFor = "/srv/e/ready";
        };
        f = {
          command = [ "anything" ];
          waitFor = "index.html";
        };
        g.command = [
          "printf"
          "%s\n"
          "hello"
        ];
      };
    expected = [
      "/var/lib/agent-box-app-src/alice/a/app.py"
      "/var/lib/agent-box-app-src/alice/b/server"
      "/var/lib/agent-box-app-src/alice/c/bin/app.py"
      null
      "/srv/e/ready"
      "/var/lib/agent-box-app-src/alice/f/index.html"
      null
    ];
  }
  {
    name = "each mistake in an app is refused with its own message";
    expr = map (m: builtins.head (builtins.split ":" m)) (failing {
      users.alice.apps = {
        "Bad" = {
          command = [ "x" ];
        };
        noprog.command = [ ];
        port = {
          command = [ "x" ];
          environment.PORT = "1";
        };
        fast = {
          command = [ "x" ];
          restartDelay = "1ms";
        };
        order = {
          command = [ "x" ];
          restartDelay = "10s";
          restartDelayMax = "5s";
        };
        mem = {
          command = [ "x" ];
          memoryMax = "lots";
          tasksMax = 0;
          environmentFiles = [ "secrets.env" ];
        };
      };
    });
    expected = [
      "services.agent-box.users.\"alice\".apps.\"Bad\""
      "services.agent-box.users.\"alice\".apps.\"fast\".restartDelay = \"1ms\""
      "services.agent-box.users.\"alice\".apps.\"mem\".memoryMax = \"lots\""
      "services.agent-box.users.\"alice\".apps.\"mem\".tasksMax = 0"
      "services.agent-box.users.\"alice\".apps.\"mem\".environmentFiles contains \"secrets.env\""
      "services.agent-box.users.\"alice\".apps.\"noprog\".command = []"
      "services.agent-box.users.\"alice\".apps.\"order\".restartDelayMax = \"5s\""
      "services.agent-box.users.\"alice\".apps.\"port\".environment.\"PORT\""
      # and none of them can be reached: alice has no web origin
      "services.agent-box.users.\"alice\".apps"
    ];
  }
  {
    name = "the apps' domain has the box domain's form (on a domain of their own, a user named like an app's label is no collision)";
    expr = map (m: builtins.head (builtins.split ": use " m)) (failing (
      webWith {
        appsDomain = "https://apps.example.net";
        logins.ops.users = [
          "alice"
          "site--alice"
        ];
      }
      // {
        users = {
          alice.apps.site.command = [ "x" ];
          "site--alice" = { };
        };
      }
    ));
    # (the other domain holds no app origin that is a user's)
    expected = [ "services.agent-box.web.appsDomain = \"https://apps.example.net\"" ];
  }
  {
    name = "an app's origin that is also a user's is refused on the box's domain";
    expr = failing (
      webWith {
        logins.ops.users = [
          "alice"
          "site--alice"
        ];
      }
      // {
        users = {
          alice.apps.site.command = [ "x" ];
          "site--alice" = { };
        };
      }
    );
    expected = [
      "services.agent-box.users.\"alice\".apps.\"site\": its origin site--alice.box.example.com is also agent user \"site--alice\"'s: set services.agent-box.web.appsDomain to another domain, or rename the app or the user."
    ];
  }
  {
    name = "apps of a user with a web origin are accepted, each on its origin in the apps' domain";
    expr =
      let
        cfg =
          webWith { appsDomain = "apps.example.net:8443"; }
          // {
            users.alice.apps = {
              records.command = [ "x" ];
              site = {
                command = [ "y" ];
                public = true;
              };
            };
          };
      in
      {
        failures = failing cfg;
        hosts = map (a: a.host) (offline.normalize cfg).web.apps;
      };
    expected = {
      failures = [ ];
      hosts = [
        "records--alice.apps.example.net:8443"
        "site--alice.apps.example.net:8443"
      ];
    };
  }
  {
    name = "an app's command reaches its program as it was written: quoted, with $ and % escaped";
    expr =
      let
        a = builtins.head
          (offline.normalize {
            users.alice.apps.echo.command = [
              "printf"
              "%s $HOME \"q\" a b"
            ];
          }).users.alice.apps;
        text = lib.render.app.service a [ ] "/R" "/P";
      in
      builtins.filter (l: builtins.isString l && builtins.match "ExecStart=/.*" l != null) (builtins.split "\n" text);
    expected = [
      "ExecStart=/R/bin/agent-box app-run --dir \"/var/lib/agent-box-app-src/alice/echo\" --restart-delay 1s --restart-delay-max 1m -- \"printf\" \"%%s $$HOME \\\"q\\\" a b\""
    ];
  }
  {
    name = "an app cannot reach its user's sockets and runtime directories under /run, nor its sibling app's directories";
    expr =
      let
        apps =
          (offline.normalize {
            users.alice.apps.a.command = [ "x" ];
            users.alice.apps.b.command = [ "y" ];
          }).users.alice.apps;
        a = builtins.head apps;
        text = lib.render.app.service a (builtins.tail apps) "/R" "/P";
      in
      builtins.filter (l: builtins.isString l && builtins.match "InaccessiblePaths=.*" l != null) (builtins.split "\n" text);
    expected = [
      "InaccessiblePaths=-/run/agent-box -/run/agent-box-app -/run/agent-box-auth -/run/agent-box-hook -/run/agent-box-notify -/run/agent-box-term -/run/agent-box-web -/run/caddy -/run/dbus -/run/user"
      "InaccessiblePaths=-/var/lib/agent-box-app-src/alice/b -/var/lib/agent-box-apps/alice/b"
    ];
  }
]
