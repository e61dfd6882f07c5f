// Package webui is the look of every page the product serves: one layout, one stylesheet and one icon.
//
// Every page, on the box origin and on every user origin, has the one
// layout (Layout: one head, one viewport) and links one stylesheet and one
// icon, which the
// auth service serves at /auth/style.css and /auth/favicon.svg on every
// origin (Caddy sends /auth/* of a user origin to it too), so that every
// page links the same two files (CSP style-src and img-src 'self'), and
// no page carries an inline style.
//
// The theme is dark and its colours are the terminal's (Terminal below is
// the workspace's xterm.js theme): a page and the terminal on it are one
// surface. A page's content is one <main>; class "wide" widens it for the
// pages with tables, and the workspace, when open, takes the full width.
package webui

import "github.com/agent-box/agent-box/internal/runtime/contract"

// Page is what Layout's "page-head" reads: what a page says of itself.
type Page struct {
	Title   string   // the document's title, before " · agent-box"
	Wide    bool     // a page of tables: main class "wide"
	Styles  []string // stylesheets the page adds before the product's own (its own origin's paths)
	Modules []string // module scripts the page adds (its own origin's paths)
	// Manifest: the web app manifest that makes the page's origin an
	// installable app (the box page only).
	Manifest string
}

// Layout is the one page layout of every page on every origin, for
// html/template: "page-head" (given a Page) opens the document up to its
// <main>, "page-foot" closes it.
func Layout() string {
	return `{{define "page-head"}}<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} · agent-box</title>
{{range .Styles}}<link rel="stylesheet" href="{{.}}">
{{end}}{{range .Modules}}<script type="module" src="{{.}}"></script>
{{end}}{{with .Manifest}}<link rel="manifest" href="{{.}}"><meta name="theme-color" content="` + Surface + `">
{{end}}<link rel="stylesheet" href="` + contract.AuthPage("style.css") + `"><link rel="icon" href="` + contract.AuthPage("favicon.svg") + `">
</head>
<body>
<main{{if .Wide}} class="wide"{{end}}>
{{end}}{{define "page-foot"}}</main>
</body>
</html>
{{end}}`
}

// Colours of the theme, shared by the stylesheet and the terminal.
const (
	Background = "#16181d"
	Surface    = "#1e2128"
	Foreground = "#d8dee9"
	Muted      = "#8b93a3"
	Accent     = "#88c0d0"
	Danger     = "#e06c75"
	Success    = "#a3be8c"
	Warning    = "#ebcb8b"
	Selection  = "#4c566a"
)

// StyleSheet is /auth/style.css.
const StyleSheet = `:root{color-scheme:dark}
*{box-sizing:border-box}
body{font:16px/1.5 system-ui,sans-serif;margin:0;background:` + Background + `;color:` + Foreground + `}
main{max-width:28rem;margin:3rem auto;padding:1.5rem;background:` + Surface + `;border:1px solid #2c313c;border-radius:.6rem}
main.wide{max-width:64rem;margin:1.5rem auto}
main.wide:has(#workspace:not([hidden])){max-width:none;margin:.75rem}
h1{font-size:1.35rem;margin:0 0 1rem}
h2{font-size:1.05rem;margin:1.5rem 0 .4rem}
h3{font-size:1rem;margin:1.2rem 0 .3rem}
a{color:` + Accent + `}
nav{display:flex;flex-wrap:wrap;gap:.2rem 1rem;margin:0 0 1rem;color:` + Muted + `}
code{font:.92em ui-monospace,"DejaVu Sans Mono",monospace;background:#262a33;padding:.05em .3em;border-radius:.25em}
label{display:block;margin:.75rem 0}
input[type=text],input[type=password],input:not([type]),select,textarea{display:block;width:100%;padding:.45rem;font:inherit;color:inherit;background:` + Background + `;border:1px solid #3b4252;border-radius:.35rem}
input[type=file]{font:inherit}
button{font:inherit;color:` + Foreground + `;background:#2e3440;border:1px solid #4c566a;border-radius:.35rem;padding:.35rem .9rem;margin:.2rem 0;cursor:pointer}
button:hover{border-color:` + Accent + `}
button[value=remove],button.danger{border-color:#7a3b42}
button[value=remove]:hover{border-color:` + Danger + `}
ul{list-style:none;padding:0;margin:0}
li form,li.quiet{display:flex;justify-content:space-between;align-items:center;gap:.5rem;border-top:1px solid #2c313c;padding:.5rem 0;margin:0}
li.urgent b{color:` + Danger + `}
li.request{border-top:1px solid #2c313c;padding:.5rem 0}
li.request form{border:none;justify-content:flex-start;flex-wrap:wrap;padding:.2rem 0 0}
li.request button{min-height:2.6rem;min-width:5rem}
li form.reply{border-top:none;padding:0 0 .5rem;justify-content:flex-start}
li form.reply input[name=text]{flex:1;min-width:0}
figure.agent-text{margin:.4rem 0;padding:.4rem .6rem;border:1px dashed #5c6370;border-radius:.35rem;background:#1b1e24}
figure.agent-text figcaption{color:` + Muted + `;font-size:.85rem;margin:0 0 .3rem}
figure.agent-text pre{margin:0 0 .3rem;font:.9rem/1.4 ui-monospace,"DejaVu Sans Mono",monospace;white-space:pre-wrap;overflow-wrap:anywhere}
time{color:` + Muted + `;font-size:.9rem}
table{border-collapse:collapse;width:100%}
th{color:` + Muted + `;font-weight:600;font-size:.9rem}
td,th{padding:.45rem .6rem;text-align:left;border-bottom:1px solid #2c313c;vertical-align:top}
tr.stopped,tr.unknown,tr.absent,tr.dead{color:` + Muted + `}
form.inline{display:inline}
.error{color:` + Danger + `}
.done{color:` + Success + `}
.quiet,.hint{color:` + Muted + `;font-size:.9rem}
body.drop main{outline:2px dashed ` + Accent + `;outline-offset:.5rem}
#workspace{margin-top:1rem}
#tabs{display:flex;flex-wrap:wrap;gap:.25rem}
.tab{display:inline-flex;border:1px solid #3b4252;border-bottom:none;border-radius:.35rem .35rem 0 0;background:#262a33}
.tab[aria-selected=true]{background:` + Background + `;border-color:` + Accent + `}
.tab button{background:none;border:none;margin:0;padding:.2rem .6rem}
.tab.closed button:first-child{text-decoration:line-through;color:` + Muted + `}
.term{height:70vh;background:` + Background + `;padding:4px;border:1px solid #3b4252}
#keys{display:flex;flex-wrap:wrap;gap:.3rem;margin:.5rem 0}
#keys button{min-width:2.8rem;min-height:2.6rem}
@media (max-width:600px){
main,main.wide{margin:0;border:none;border-radius:0;padding:.75rem}
td,th{padding:.35rem .3rem}
.term{height:55vh}
#sessions td:nth-child(2),#sessions td:nth-child(4),#sessions td:nth-child(5),thead th:nth-child(2),thead th:nth-child(4),thead th:nth-child(5){display:none}
}
`

// Favicon is /auth/favicon.svg: a terminal prompt in the theme's colours.
const Favicon = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">` +
	`<rect width="32" height="32" rx="6" fill="` + Background + `"/>` +
	`<path d="M8 10l7 6-7 6" fill="none" stroke="` + Accent + `" stroke-width="3" stroke-linecap="round" stroke-linejoin="round"/>` +
	`<path d="M17 23h8" stroke="` + Foreground + `" stroke-width="3" stroke-linecap="round"/></svg>
`
