package report

import (
	"bytes"
	"html/template"
	"strings"
	"testing"

	"github.com/fsbench/fsbench/internal/verdict"
)

// TestVerdictWordsSameInHTML: the terminal and the HTML page print the same words.
func TestVerdictWordsSameInHTML(t *testing.T) {
	r := loadRun(t)
	var page bytes.Buffer
	if err := HTML(&page, r, HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	ties := 0
	for _, v := range verdict.Verdicts(r, 0) {
		w := v.Words()
		for _, s := range []string{w.Head, w.Margin, w.Significance, w.Note} {
			if !strings.Contains(page.String(), template.HTMLEscapeString(s)) {
				t.Errorf("%s: the page lacks %q", v.Priority, s)
			}
		}
		if strings.HasPrefix(w.Head, "no clear winner") {
			ties++
			if strings.Contains(page.String(), `<span class="winner">`+template.HTMLEscapeString(w.Head)) {
				t.Errorf("%s: a tie is shown as a winner", v.Priority)
			}
		}
	}
	if ties == 0 {
		t.Error("the fixture has no tie: the test proves nothing")
	}
}
