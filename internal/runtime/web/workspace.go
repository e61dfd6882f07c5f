package web

import (
	"net/http"
	"os"
	"path"
	"strings"

	"github.com/agent-box/agent-box/internal/runtime/contract"
	"github.com/agent-box/agent-box/internal/runtime/webui"
)

// AssetsRoute is where the workspace's browser libraries are served.
var AssetsRoute = contract.WebAssets.Route

// workspaceScriptName is the workspace's own module, served from this
// program (the libraries come from AGENT_BOX_WEB_ASSETS).
const workspaceScriptName = "workspace.mjs"

// servedAssets are the names of the contract's web assets: nothing else
// of the directory is served.
var servedAssets = func() map[string]bool {
	m := map[string]bool{}
	for _, p := range contract.WebAssets.Packages {
		for _, name := range p.Files {
			m[name] = true
		}
	}
	return m
}()

// termStyle is the terminal's stylesheet among the assets (the one .css).
var termStyle = func() string {
	for name := range servedAssets {
		if path.Ext(name) == ".css" {
			return name
		}
	}
	return ""
}()

// assetType is the Content-Type of a served asset by its extension.
func assetType(name string) string {
	switch path.Ext(name) {
	case ".mjs", ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	}
	return "text/plain; charset=utf-8" // the licenses
}

// asset is GET /assets/NAME: the workspace's module, or one of the
// contract's assets from the assets directory (through an os.Root).
func (s *Server) asset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	w.Header().Set("Content-Type", assetType(name))
	if name == workspaceScriptName && s.cfg.AssetsDir != "" {
		w.Write([]byte(workspaceScript))
		return
	}
	if !servedAssets[name] || s.cfg.AssetsDir == "" {
		plain(w, http.StatusNotFound, "not found")
		return
	}
	root, err := os.OpenRoot(s.cfg.AssetsDir)
	if err != nil {
		s.log.Printf("web assets: %v", err)
		plain(w, http.StatusNotFound, "not found")
		return
	}
	defer root.Close()
	f, err := root.Open(name)
	if err != nil {
		s.log.Printf("web assets: %v", err)
		plain(w, http.StatusNotFound, "not found")
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		plain(w, http.StatusNotFound, "not found")
		return
	}
	http.ServeContent(w, r, name, fi.ModTime(), f)
}

// workspaceCSP is the list page's policy when it carries the workspace:
// scripts from this origin (the libraries and the module) and the page
// script by its hash; styles from this origin and inline, because
// xterm.js's renderer writes <style> elements (as on ttyd's page); its
// WebSockets on this origin only.
func (s *Server) workspaceCSP() string {
	return "default-src 'none'; script-src 'self' " + hashSource(pageScript) +
		"; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:" +
		"; connect-src 'self' wss://" + s.host + "; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
}

// keyBar is the workspace's keys for a keyboard without them (a phone):
// label, title and the key's name in the module's table (an "arrow:X" is
// the cursor key X in the terminal's current cursor mode).
var keyBar = []struct{ Label, Title, Send string }{
	{"Esc", "Escape", "esc"},
	{"Tab", "Tab", "tab"},
	{"⇤", "Shift-Tab", "backtab"},
	{"←", "Left", "arrow:D"},
	{"↑", "Up", "arrow:A"},
	{"↓", "Down", "arrow:B"},
	{"→", "Right", "arrow:C"},
	{"^C", "Ctrl-C (interrupt)", "ctrl-c"},
	{"⏎", "Enter", "enter"},
}

// workspaceScript is the workspace: each session link opens a terminal
// tab on the page (xterm.js speaking ttyd's protocol on /term/ws, through
// this daemon's checks, as ttyd's own page does); tabs switch without
// reconnecting; links that tmux wrapped over several rows open and copy
// whole; OSC 52 (a tmux copy) reaches the browser's clipboard; the key
// bar sends keys a phone lacks. A click with a modifier follows the link
// to ttyd's own page.
var workspaceScript = strings.NewReplacer("ROUTE", AssetsRoute, "THEME_BG", webui.Background, "THEME_FG", webui.Foreground,
	"THEME_SEL", webui.Selection).Replace(`import { Terminal } from "ROUTExterm.mjs";
import { FitAddon } from "ROUTEaddon-fit.mjs";
import { ClipboardAddon } from "ROUTEaddon-clipboard.mjs";

const ws = document.getElementById("workspace");
const tabBar = document.getElementById("tabs");
const terms = document.getElementById("terms");
const enc = new TextEncoder();
const tabs = new Map();
let active = null;
window.agentBoxTabs = tabs; // for the browser test

document.addEventListener("click", (e) => {
  const a = e.target.closest && e.target.closest("a[data-session]");
  if (!a || e.button || e.ctrlKey || e.metaKey || e.shiftKey || e.altKey) return;
  e.preventDefault();
  open(a.dataset.session);
});

function open(name) {
  ws.hidden = false; // xterm.js measures its cells when it opens
  let t = tabs.get(name);
  if (!t) {
    t = create(name);
    tabs.set(name, t);
  } else if (!t.sock || t.sock.readyState > 1) {
    connect(t);
  }
  show(t);
}

function show(t) {
  ws.hidden = false;
  for (const o of tabs.values()) {
    o.box.hidden = o !== t;
    o.tab.setAttribute("aria-selected", o === t ? "true" : "false");
  }
  active = t;
  t.fit.fit();
  t.term.focus();
}

function create(name) {
  const box = document.createElement("div");
  box.className = "term";
  terms.append(box);
  const tab = document.createElement("span");
  tab.className = "tab";
  tab.setAttribute("role", "tab");
  const label = document.createElement("button");
  label.textContent = name;
  label.title = "Show " + name;
  const close = document.createElement("button");
  close.textContent = "×";
  close.title = "Close the tab of " + name + " (the session goes on)";
  tab.append(label, close);
  tabBar.append(tab);
  const term = new Terminal({
    cursorBlink: true,
    fontFamily: "ui-monospace, 'DejaVu Sans Mono', monospace",
    fontSize: window.innerWidth < 600 ? 12 : 14,
    scrollback: 5000,
    theme: { background: "THEME_BG", foreground: "THEME_FG", cursor: "THEME_FG", selectionBackground: "THEME_SEL" },
  });
  const fit = new FitAddon();
  term.loadAddon(fit);
  term.loadAddon(new ClipboardAddon(undefined, clipboardWriteOnly));
  term.registerLinkProvider(wrappedLinks(term));
  term.open(box);
  const t = { name, term, fit, box, tab, sock: null, opens: 0 };
  term.onData((d) => send(t, "0" + d));
  term.onBinary((d) => send(t, "0" + d));
  term.onResize(({ cols, rows }) => send(t, "1" + JSON.stringify({ columns: cols, rows })));
  term.attachCustomKeyEventHandler((e) => {
    // Ctrl-Shift-C copies the browser's selection (Shift-drag makes one)
    if (e.type === "keydown" && e.ctrlKey && e.shiftKey && e.code === "KeyC" && term.hasSelection()) {
      navigator.clipboard.writeText(term.getSelection()).catch(() => {});
      return false;
    }
    return true;
  });
  label.addEventListener("click", () => open(name));
  close.addEventListener("click", () => {
    if (t.sock) t.sock.close();
    term.dispose();
    box.remove();
    tab.remove();
    tabs.delete(name);
    if (active === t) {
      active = null;
      const next = [...tabs.values()].pop();
      if (next) show(next);
      else ws.hidden = true;
    }
  });
  connect(t);
  return t;
}

// OSC 52: what the session copies reaches the browser's clipboard for any
// selection (tmux sends none: "\e]52;;DATA"), and nothing in the session
// can read the clipboard (a query is answered empty).
const clipboardWriteOnly = {
  readText: async () => "",
  writeText: async (_selection, text) => navigator.clipboard.writeText(text),
};

function connect(t) {
  const sock = new WebSocket("wss://" + location.host + ws.dataset.socket + "?arg=" + encodeURIComponent(t.name), ["tty"]);
  sock.binaryType = "arraybuffer";
  sock.addEventListener("open", () => {
    t.opens++;
    t.tab.classList.remove("closed");
    sock.send(enc.encode(JSON.stringify({ AuthToken: "", columns: t.term.cols, rows: t.term.rows })));
  });
  sock.addEventListener("message", (ev) => {
    const d = new Uint8Array(ev.data);
    if (d[0] === 48) t.term.write(d.subarray(1)); // "0": output
  });
  sock.addEventListener("close", () => {
    if (t.sock !== sock) return;
    t.tab.classList.add("closed");
    t.term.write("\r\n\x1b[2m[disconnected: click the tab to connect again]\x1b[0m\r\n");
  });
  t.sock = sock;
}

function send(t, msg) {
  if (t.sock && t.sock.readyState === 1) t.sock.send(enc.encode(msg));
}

// Links: a URL tmux wrapped is several full rows to the terminal; rows
// are joined while one is full to the last column, so a URL of any
// length opens, and is copied, whole.
const urlRe = /https?:\/\/[^\s"'<>]+/g;
function wrappedLinks(term) {
  return {
    provideLinks(y, callback) {
      const b = term.buffer.active, cols = term.cols;
      const row = (i) => { const l = b.getLine(i); return l ? l.translateToString(false) : ""; };
      const full = (i) => { const s = row(i); return s.length >= cols && s[cols - 1] !== " "; };
      let first = y - 1, last = y - 1;
      while (first > 0 && full(first - 1)) first--;
      while (last + 1 < b.length && full(last)) last++;
      let text = "";
      for (let i = first; i <= last; i++) text += i < last ? row(i).slice(0, cols) : row(i).replace(/\s+$/, "");
      const links = [];
      for (const m of text.matchAll(urlRe)) {
        const uri = m[0].replace(/[.,;:!?)\]]+$/, "");
        const s = m.index, e = m.index + uri.length - 1;
        const start = { x: (s % cols) + 1, y: first + Math.floor(s / cols) + 1 };
        const end = { x: (e % cols) + 1, y: first + Math.floor(e / cols) + 1 };
        if (start.y > y || end.y < y) continue;
        links.push({
          range: { start, end },
          text: uri,
          activate: (ev, u) => {
            navigator.clipboard.writeText(u).catch(() => {});
            window.open(u, "_blank", "noopener,noreferrer");
          },
        });
      }
      callback(links);
    },
  };
}

// The key bar: keys a phone's keyboard lacks, to the active terminal.
const keys = { esc: "\x1b", tab: "\t", backtab: "\x1b[Z", "ctrl-c": "\x03", enter: "\r" };
for (const k of document.querySelectorAll("#keys button")) {
  k.addEventListener("pointerdown", (e) => e.preventDefault()); // keep the terminal's focus
  k.addEventListener("click", () => {
    if (!active) return;
    const n = k.dataset.send;
    const s = n.startsWith("arrow:") ? (active.term.modes.applicationCursorKeysMode ? "\x1bO" : "\x1b[") + n.slice(6) : keys[n];
    if (s) active.term.input(s);
    active.term.focus();
  });
}

addEventListener("resize", () => active && active.fit.fit());
ws.dataset.ready = "true";
`)
