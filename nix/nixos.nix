# NixOS configurations for the flake's checks: the pinned nixpkgs, the
# smallest host that evaluates (no boot loader, a root file system), and the
# given modules. Forcing toplevel or /etc works because nothing here depends
# on real hardware.
{ lib, system }:

modules:
lib.nixosSystem {
  modules = [
    {
      nixpkgs.hostPlatform = system;
      boot.loader.grub.enable = false;
      fileSystems."/".device = "nodev";
      system.stateVersion = "26.05";
    }
  ]
  ++ modules;
}
