package webui

import (
	"encoding/xml"
	"regexp"
	"strings"
	"testing"
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
