# Two users, a host-defined agent, per-user and box-wide limits,
# environment and host-managed secrets files. The limits are small enough
# for the VM tier to hit them (alice: MemoryMax 384M, TasksMax 256; the
# box: MemoryMax 700M).
{ pkgs, ... }:
{
  enable = true;
  defaultAgent = "shell";
  extraPackages = [
    pkgs.git
    pkgs.ripgrep
  ];
  agents.sleeper = {
    package = pkgs.coreutils;
    command = "sleep";
    args = [ "infinity" ];
  };
  # The box's line is low enough for the VM tier's guest (1.5 GiB) to pass
  # it with two users' agents (limits.sh).
  slice = {
    memoryMax = "700M";
    tasksMax = 16384;
    cpuWeight = 50;
  };
  users.alice = {
    extraGroups = [ "wheel" ];
    sessions.main = {
      agent = "sleeper";
      workingDirectory = "/tmp";
    };
    sessions.scratch = { };
    environment = {
      EDITOR = "vim";
      LANG = "C.UTF-8";
    };
    environmentFiles = [
      "-/run/secrets/alice.env"
      "-/run/secrets/optional.env"
    ];
    memoryHigh = null;
    memoryMax = "384M";
    tasksMax = 256;
    cpuWeight = 200;
    diskQuota = "300M";
  };
  users.bob = {
    agents = [ "sleeper" ];
    sessions.shell = {
      agent = "shell";
    };
    environment.TZ = "Europe/Berlin";
    memoryHigh = "1G";
    memoryMax = "infinity";
    tasksMax = null;
  };
}
