# agent-box: a NixOS module that turns a host into a multi-user box for
# coding agents. This is the module's entry source; modules/agent-box.nix is
# generated from it by `go run ./cmd/assemble-module`.
{ config, lib, ... }:

let
  inherit (lib) mkEnableOption mkIf;
  cfg = config.services.agent-box;
in
{
  options.services.agent-box = {
    enable = mkEnableOption "agent-box, a multi-user box for coding agents";
  };

  config = mkIf cfg.enable { };
}
