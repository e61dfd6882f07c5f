# One user, every default.
{ pkgs, ... }:
{
  enable = true;
  users.alice = { };
}
