# The option tree of services.agent-box as data (builtins only): types,
# defaults, descriptions and examples. The NixOS glue turns it into mkOption
# declarations, the offline tests apply the same defaults, and the README's
# option reference is generated from it.
#
# A spec is { type; default?; defaultText?; description; example?; options? }:
#   type is one of "bool" "str" "int" "nullOr str" "nullOr int" "listOf str"
#   "attrsOf str" "package" "listOf package" "submodule" "attrsOf submodule";
#   example is Nix expression text; options holds a submodule's specs.
#   A spec without default is required.
let
  limit = what: default: example: {
    type = "nullOr str";
    inherit default example;
    description = "`${what}=` of the unit: a size with K, M, G or T suffix, a percentage of physical memory, `infinity`, or `null` for no limit.";
  };
in
{
  enable = {
    type = "bool";
    default = false;
    description = "Whether to enable agent-box.";
    example = "true";
  };

  defaultAgent = {
    type = "str";
    default = "shell";
    description = "Agent used by sessions that name none, and by `agent-box session add` without `--agent`. Must be a key of `services.agent-box.agents`.";
    example = ''"claude"'';
  };

  extraPackages = {
    type = "listOf package";
    default = [ ];
    description = "Packages put on every agent user's `PATH` inside its sessions, besides tmux, the agents and a small base set (bash, coreutils, findutils, grep, sed, less).";
    example = "[ pkgs.git pkgs.ripgrep ]";
  };

  slice = {
    type = "submodule";
    default = { };
    description = "Box-wide limits of `agent-box.slice`, the cgroup that holds every agent user's instance.";
    options = {
      memoryHigh = limit "MemoryHigh" null ''"80%"'';
      memoryMax = limit "MemoryMax" "90%" ''"24G"'';
      tasksMax = {
        type = "nullOr int";
        default = null;
        description = "`TasksMax=` of the slice: the most processes and threads all agents together may have; `null` for no limit.";
        example = "16384";
      };
      cpuWeight = {
        type = "int";
        default = 100;
        description = "`CPUWeight=` of the slice (1 to 10000) against the host's other slices.";
        example = "50";
      };
    };
  };

  agents = {
    type = "attrsOf submodule";
    default = { };
    defaultText = "the built-ins shell, claude, codex and opencode";
    description = "Agents sessions can run. The built-ins `shell` (bash), `claude` (`pkgs.claude-code`, unfree), `codex` and `opencode` are always defined and can be overridden attribute by attribute; an agent's package is only built for users whose sessions use it (or who list it in `agents`).";
    example = ''{ aider = { package = pkgs.aider-chat; command = "aider"; args = [ "--no-auto-commits" ]; }; }'';
    options = {
      package = {
        type = "package";
        description = "Package that provides the agent's command; it joins the user's environment.";
        example = "pkgs.aider-chat";
      };
      command = {
        type = "str";
        description = "Executable name in the package's `bin/` (or an absolute path).";
        example = ''"aider"'';
      };
      args = {
        type = "listOf str";
        default = [ ];
        description = "Arguments before each session's own arguments.";
        example = ''[ "--no-auto-commits" ]'';
      };
    };
  };

  users = {
    type = "attrsOf submodule";
    default = { };
    description = "Agent users. Each name becomes a normal Linux user with home `/home/<name>` and a running `agent-box@<name>.service`.";
    example = ''{ alice = { sessions.main = { agent = "claude"; workingDirectory = "/home/alice/src"; }; }; }'';
    options = {
      extraGroups = {
        type = "listOf str";
        default = [ ];
        description = "Supplementary groups of the Linux user.";
        example = ''[ "docker" ]'';
      };
      agents = {
        type = "listOf str";
        default = [ ];
        description = "Agents available to sessions added at run time, besides those the seed sessions use and `defaultAgent`.";
        example = ''[ "codex" ]'';
      };
      sessions = {
        type = "attrsOf submodule";
        default = { };
        description = "Seed sessions: added to the user's registry at every supervisor start unless present or removed by the user (a removal is remembered); existing entries are never changed.";
        example = ''{ main = { agent = "claude"; args = [ "--continue" ]; }; }'';
        options = {
          agent = {
            type = "nullOr str";
            default = null;
            description = "Agent to run; `null` means `services.agent-box.defaultAgent`.";
            example = ''"claude"'';
          };
          args = {
            type = "listOf str";
            default = [ ];
            description = "Arguments after the agent's own; passed as is, never through a shell.";
            example = ''[ "--model" "opus" ]'';
          };
          workingDirectory = {
            type = "nullOr str";
            default = null;
            description = "Absolute working directory; `null` means the user's home.";
            example = ''"/home/alice/src/project"'';
          };
        };
      };
      environment = {
        type = "attrsOf str";
        default = { };
        description = "Non-secret environment of the instance and its sessions. Values are passed literally (`%`, quotes, `$` included); newlines are rejected. `PATH`, `HOME`, `USER` and `AGENT_BOX_*` are managed by agent-box.";
        example = ''{ EDITOR = "vim"; }'';
      };
      environmentFiles = {
        type = "listOf str";
        default = [ ];
        description = "Absolute paths of host-managed secrets files (`KEY=VALUE` lines) read by systemd as `EnvironmentFile=`; prefix `-` to ignore a missing file. Never put secrets in `environment`: it lands in the world-readable Nix store.";
        example = ''[ "/run/secrets/alice.env" ]'';
      };
      memoryHigh = limit "MemoryHigh" "60%" ''"8G"'';
      memoryMax = limit "MemoryMax" "75%" ''"12G"'';
      tasksMax = {
        type = "nullOr int";
        default = 4096;
        description = "`TasksMax=` of the instance: the most processes and threads its sessions may have (a fork bomb stops here); `null` for no limit.";
        example = "8192";
      };
      cpuWeight = {
        type = "int";
        default = 100;
        description = "`CPUWeight=` of the instance (1 to 10000) against the other agent users.";
        example = "200";
      };
    };
  };
}
