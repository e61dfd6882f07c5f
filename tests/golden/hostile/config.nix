# Values systemd, JSON and shells could misread: specifiers, quotes,
# backslashes, dollars, command substitution, unicode.
{ pkgs, ... }:
{
  enable = true;
  users.mallory = {
    sessions."weird_name-1" = {
      args = [
        "%i %h %%"
        "\"double\" 'single'"
        "back\\slash \\n"
        "$HOME \${HOME} $(id) `id`"
        "ünïcødé ☃ 日本"
        "a=b c"
        ""
      ];
      workingDirectory = "/home/mallory/dir with spaces/%i";
    };
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
    environmentFiles = [ "/run/secrets/mallory %i.env" ];
  };
}
