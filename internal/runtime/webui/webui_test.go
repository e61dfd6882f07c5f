package webui

import (
	"encoding/xml"
	"html/template"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The stylesheet is one the browser can take whole: balanced braces, no
// rule that would need an inline style or a remote resource.
func TestTheStyleSheetIsSelfContained(t *testing.T) {
	if o, c := strings.Count(StyleSheet, "{"), strings.Count(StyleSheet, "}"); o != c || o == 0 {
		t.Errorf("%d { and %d }", o, c)
	}
	for _, bad := range []string{"url(", "@import", "expression(", "http:", "https:"} {
		if strings.Contains(StyleSheet, bad) {
			t.Errorf("the stylesheet has %q", bad)
		}
	}
	// the selectors the pages rely on
	for _, sel := range []string{"main.wide{", "#workspace{", "#keys button{", ".error{", ".done{", "tr.stopped", "@media (max-width:600px)"} {
		if !strings.Contains(StyleSheet, sel) {
			t.Errorf("the stylesheet lacks %q", sel)
		}
	}
}

// The theme's colours are six-digit hex colours, and the page's background
// is the terminal's.
func TestTheThemeIsTheTerminals(t *testing.T) {
	hex := regexp.MustCompile(`^#[0-9a-f]{6}$`)
	for _, c := range []string{Background, Surface, Foreground, Muted, Accent, Danger, Success, Warning, Selection} {
		if !hex.MatchString(c) {
			t.Errorf("colour %q", c)
		}
	}
	if !strings.Contains(StyleSheet, "body{font:16px/1.5 system-ui,sans-serif;margin:0;background:"+Background) {
		t.Error("the page's background is not the terminal's")
	}
}

func TestTheFaviconIsWellFormedSVG(t *testing.T) {
	d := xml.NewDecoder(strings.NewReader(Favicon))
	for {
		_, err := d.Token()
		if err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("favicon: %v", err)
			}
			break
		}
	}
	if !strings.HasPrefix(Favicon, `<svg xmlns="http://www.w3.org/2000/svg"`) || strings.Contains(Favicon, "<script") {
		t.Error("favicon: not a plain SVG")
	}
}

// TestEveryPageHasTheOneLayout: no page of the runtime opens its own
// document: the doctype, the head and the viewport are written here only.
func TestEveryPageHasTheOneLayout(t *testing.T) {
	files, err := filepath.Glob("../*/*.go")
	if err != nil {
		t.Fatal(err)
	}
	own := regexp.MustCompile(`(?i)<!doctype html>|<head[ >]|name="viewport"|rel="stylesheet" href="{{auth`)
	checked := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || filepath.Dir(f) == "../webui" {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		if m := own.Find(data); m != nil {
			t.Errorf("%s writes %q itself: open its page with {{template \"page-head\" ...}} (webui.Layout)", f, m)
		}
	}
	if checked < 50 {
		t.Fatalf("checked only %d files: the glob is wrong", checked)
	}
}

// TestTheLayoutRendersOneHead: the layout gives a page one doctype, one
// head with the viewport, the page's own stylesheets and modules before
// the product's stylesheet and icon, and one main.
func TestTheLayoutRendersOneHead(t *testing.T) {
	tpl := template.Must(template.New("p").Parse(Layout() + `{{template "page-head" .}}<p>body</p>{{template "page-foot"}}`))
	var b strings.Builder
	if err := tpl.Execute(&b, Page{Title: "alice: <x>", Wide: true, Styles: []string{"/assets/t.css"}, Modules: []string{"/assets/w.mjs"}}); err != nil {
		t.Fatal(err)
	}
	want := `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>alice: &lt;x&gt; · agent-box</title>
<link rel="stylesheet" href="/assets/t.css">
<script type="module" src="/assets/w.mjs"></script>
<link rel="stylesheet" href="/auth/style.css"><link rel="icon" href="/auth/favicon.svg">
</head>
<body>
<main class="wide">
<p>body</p></main>
</body>
</html>
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("layout (-want +got):\n%s", diff)
	}
}
