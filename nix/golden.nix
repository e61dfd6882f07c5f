# Check `golden`: the installed truth of each golden configuration equals the
# fixture the offline tier renders.
#
# For every name in goldens, a NixOS configuration sets services.agent-box to
# tests/golden/<name>/config.nix and builds its real /etc/systemd/system tree
# (config.environment.etc."systemd/system".source, made by generateUnits).
# Every entry with a path component starting with "agent-box" is captured:
# files and absolute symlinks (packaged units, drop-ins) by content,
# relative symlinks (the multi-user.target.wants link) as "name -> target".
# The seed and agents files the drop-ins name are captured too. Store hashes
# become 32 zeros, then files/ and links are diffed against the fixture.
# Anything extra (a full agent-box@<user>.service shadowing the template, a
# NixOS-rendered drop-in carrying an injected PATH, another wants link)
# differs and fails.
{
  lib,
  pkgs,
  nixos,
  module,
  goldenDir,
  goldens,
}:

let
  inherit (lib) concatMapStrings escapeShellArg;

  treeOf =
    name:
    (nixos [
      module
      (
        { pkgs, ... }:
        {
          services.agent-box = import (goldenDir + "/${name}/config.nix") { inherit pkgs; };
        }
      )
    ]).config.environment.etc."systemd/system".source;
in
pkgs.runCommand "agent-box-golden"
  {
    nativeBuildInputs = [ pkgs.diffutils ];
  }
  ''
    set -euo pipefail
    zero() {
      sed -E 's#/nix/store/[0-9a-z]{32}-#/nix/store/00000000000000000000000000000000-#g'
    }

    # capture TREE OUT: what the tree installs for agent-box, as the fixture
    # records it (paths relative to /).
    capture() {
      local tree=$1 out=$2 rel path target store
      mkdir -p "$out/files"
      : > "$out/links.unsorted"
      : > "$out/store-paths"
      while IFS= read -r rel; do
        case "/$rel" in
          */agent-box*) ;;
          *) continue ;;
        esac
        path="$tree/$rel"
        if [ -L "$path" ] && target=$(readlink "$path") && [ "''${target#/}" = "$target" ]; then
          printf 'etc/systemd/system/%s -> %s\n' "$rel" "$target" >> "$out/links.unsorted"
          continue
        fi
        if [ ! -f "$path" ]; then
          echo "golden: etc/systemd/system/$rel is neither a file nor a relative link" >&2
          return 1
        fi
        mkdir -p "$(dirname "$out/files/etc/systemd/system/$rel")"
        zero < "$path" > "$out/files/etc/systemd/system/$rel"
        grep -ohE 'AGENT_BOX_(SEED|AGENTS)=/nix/store/[^"[:space:]]+' "$path" \
          | sed 's/^[^=]*=//' >> "$out/store-paths" || true
      done < <(cd "$tree" && find . -mindepth 1 \( -type f -o -type l \) -printf '%P\n' | LC_ALL=C sort)
      LC_ALL=C sort -u "$out/store-paths" | while IFS= read -r store; do
        mkdir -p "$out/files/nix/store"
        zero < "$store" > "$out/files/nix/store/$(basename "$(printf '%s' "$store" | zero)")"
      done
      LC_ALL=C sort "$out/links.unsorted" > "$out/links"
      rm "$out/links.unsorted" "$out/store-paths"
    }

    failed=()
    mkdir -p "$out"
    ${concatMapStrings (name: ''
      echo "golden: ${name}"
      capture ${treeOf name} "$out"/${escapeShellArg name}
      golden=${goldenDir}/${escapeShellArg name}
      grep -vE '^(#|$)' "$golden/links" | LC_ALL=C sort > want-links || true
      ok=1
      if ! diff -ru "$golden/files" "$out"/${escapeShellArg name}/files; then
        echo "golden: ${name}: the installed files differ from tests/golden/${name}/files (-fixture +NixOS)" >&2
        ok=0
      fi
      if ! diff -u want-links "$out"/${escapeShellArg name}/links; then
        echo "golden: ${name}: the installed links differ from tests/golden/${name}/links (-fixture +NixOS)" >&2
        ok=0
      fi
      if [ "$ok" = 0 ]; then
        failed+=(${escapeShellArg name})
      fi
    '') goldens}

    if [ "''${#failed[@]}" -gt 0 ]; then
      echo "golden: NixOS installs something else than the fixture for: ''${failed[*]}" >&2
      echo "hint: the fixture is rendered offline (go test ./internal/moduletest -run TestGoldenFixtures); if it is right, the NixOS glue in modules/src/agent-box.nix is wrong" >&2
      exit 1
    fi
  ''
