# Two users, a host-defined agent, per-user and box-wide limits,
# environment and host-managed secrets files.
{ pkgs, ... }:
{
  enable = true;
  defaultAgent = "shell";
  extraPackages = [
    pkgs.git
    pkgs.ripgrep
  ];
  agents.greeter = {
    package = pkgs.hello;
    command = "hello";
    args = [ "--greeting=hi" ];
  };
  slice = {
    memoryHigh = "80%";
    memoryMax = "20G";
    tasksMax = 16384;
    cpuWeight = 50;
  };
  users.alice = {
    extraGroups = [ "wheel" ];
    sessions.main = {
      agent = "greeter";
      args = [ "--verbose" ];
      workingDirectory = "/home/alice/src";
    };
    sessions.scratch = { };
    environment = {
      EDITOR = "vim";
      LANG = "C.UTF-8";
    };
    environmentFiles = [
      "/run/secrets/alice.env"
      "-/run/secrets/optional.env"
    ];
    memoryHigh = "4G";
    memoryMax = "6G";
    tasksMax = 512;
    cpuWeight = 200;
  };
  users.bob = {
    agents = [ "greeter" ];
    sessions.shell = {
      agent = "shell";
    };
    environment.TZ = "Europe/Berlin";
    memoryHigh = null;
    memoryMax = "infinity";
    tasksMax = null;
  };
}
