#!/usr/bin/env bash
# golden-check.sh TREE ETC GOLDEN OUT [ROOT]
#
# Compares what a built /etc/systemd/system tree (TREE, as NixOS's
# generateUnits makes it) and the agent-box entries of environment.etc
# (ETC: a directory whose agent-box/** entries link to their sources)
# install for agent-box with a golden fixture directory (GOLDEN: files/ and
# links, paths relative to /). Used by the flake's `golden` check;
# internal/flakecheck runs it offline on trees it builds itself.
#
# Captured into OUT (same layout as the fixture): every entry of TREE with a
# path component starting with "agent-box", and the runtime directories'
# mount units (run-agent\x2dbox-<user>.mount); files and absolute symlinks by
# content, relative symlinks (the multi-user.target.wants enablement) as
# "name -> target" lines; plus the seed and agents files the drop-ins name
# (AGENT_BOX_SEED, AGENT_BOX_AGENTS, AGENT_BOX_AUTH_CONFIG, AGENT_BOX_HOOKS,
# and the table `nft -f` loads; read under ROOT, default /), every
# file under ETC/agent-box as files/etc/agent-box/... by content, the
# agent-box* files of ETC/fail2ban/filter.d, jail.d and action.d and of
# ETC/sysctl.d, ETC/tmpfiles.d, ETC/polkit-1/rules.d and ETC/claude-code/managed-settings.d (likewise),
# ETC/claude-code/CLAUDE.md, ETC/codex/config.toml, ETC/opencode's three files,
# and the agent-box store files
# ETC/caddy/caddy_config imports. Store
# hashes become 32 zeros. Anything extra, missing or different fails (exit
# 1) with a diff (-fixture +installed).
set -euo pipefail

if [ "$#" -lt 4 ] || [ "$#" -gt 5 ]; then
  echo "usage: golden-check.sh TREE ETC GOLDEN OUT [ROOT]" >&2
  exit 2
fi
tree=$1 etc=$2 golden=$3 out=$4 root=${5:-}

zero() {
  sed -E 's#/nix/store/[0-9a-z]{32}-#/nix/store/00000000000000000000000000000000-#g'
}

mkdir -p "$out/files"
links=() stores=()
while IFS= read -r rel; do
  case "/$rel" in
    */agent-box* | '/run-agent\x2dbox-'*.mount) ;;
    *) continue ;;
  esac
  path="$tree/$rel"
  if [ -L "$path" ]; then
    target=$(readlink "$path")
    if [ "${target#/}" = "$target" ]; then
      links+=("etc/systemd/system/$rel -> $target")
      continue
    fi
  fi
  if [ ! -f "$path" ]; then
    echo "golden-check: etc/systemd/system/$rel is neither a file nor a relative link" >&2
    exit 1
  fi
  mkdir -p "$(dirname "$out/files/etc/systemd/system/$rel")"
  zero <"$path" >"$out/files/etc/systemd/system/$rel"
  while IFS= read -r store; do
    stores+=("$store")
  done < <(grep -ohE '(AGENT_BOX_(SEED|AGENTS|AUTH_CONFIG|HOOKS)=|nft -f )/nix/store/[^"[:space:]]+' "$path" | sed -E 's/^(AGENT_BOX_[A-Z_]+=|nft -f )//' | LC_ALL=C sort -u)
done < <(cd "$tree" && find . -mindepth 1 \( -type f -o -type l \) -printf '%P\n' | LC_ALL=C sort)

if [ -d "$etc/agent-box" ]; then
  while IFS= read -r rel; do
    mkdir -p "$(dirname "$out/files/etc/agent-box/$rel")"
    zero <"$etc/agent-box/$rel" >"$out/files/etc/agent-box/$rel"
  done < <(cd "$etc/agent-box" && find -L . -mindepth 1 -type f -printf '%P\n' | LC_ALL=C sort)
fi
for dir in fail2ban/filter.d fail2ban/jail.d fail2ban/action.d sysctl.d tmpfiles.d polkit-1/rules.d claude-code/managed-settings.d; do
  [ -d "$etc/$dir" ] || continue
  while IFS= read -r rel; do
    mkdir -p "$out/files/etc/$dir"
    zero <"$etc/$dir/$rel" >"$out/files/etc/$dir/$rel"
  done < <(cd "$etc/$dir" && find -L . -mindepth 1 -maxdepth 1 -type f \( -name 'agent-box*' -o -name '[0-9][0-9]-agent-box*' \) -printf '%P\n' | LC_ALL=C sort)
done
# Claude Code's managed guide, Codex's system config and OpenCode's managed
# config, plugin and guide (installed when a user has an agent with setup
# "claude", "codex" or "opencode").
for f in claude-code/CLAUDE.md codex/config.toml opencode/opencode.json opencode/agent-box.js opencode/AGENTS.md; do
  [ -f "$etc/$f" ] || continue
  mkdir -p "$(dirname "$out/files/etc/$f")"
  zero <"$etc/$f" >"$out/files/etc/$f"
done
if [ -f "$etc/caddy/caddy_config" ]; then
  while IFS= read -r store; do
    stores+=("$store")
  done < <(grep -oE 'import /nix/store/[0-9a-z]{32}-agent-box-[^[:space:]]+' "$etc/caddy/caddy_config" | sed 's/^import //')
fi

for store in "${stores[@]}"; do
  mkdir -p "$out/files/nix/store"
  zero <"$root$store" >"$out/files/nix/store/$(basename "$(printf '%s\n' "$store" | zero)")"
done
if [ "${#links[@]}" -gt 0 ]; then
  printf '%s\n' "${links[@]}" | LC_ALL=C sort >"$out/links"
else
  : >"$out/links"
fi

status=0
if ! diff -ru "$golden/files" "$out/files"; then
  echo "golden-check: the installed files differ from the fixture's files/ (-fixture +installed)" >&2
  status=1
fi
if ! diff -u <(grep -vE '^(#|$)' "$golden/links" | LC_ALL=C sort) "$out/links"; then
  echo "golden-check: the installed links differ from the fixture's links (-fixture +installed)" >&2
  status=1
fi
exit "$status"
