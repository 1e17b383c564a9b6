package console

import (
	"strings"
	"testing"
)

// The grid's cells and the runs' squares are written in Go, not by the
// templates: every value in them is escaped for its attribute or text, so
// that hostile text cannot leave its attribute or add markup.
func TestCellsAndSquaresEscapeTheirText(t *testing.T) {
	hostileTitle := `"><script>alert(1)</script><a title='`
	hostileStatus := statusView{Word: "X", Icon: `<img src=x onerror=alert(2)>`, Class: `st-ok" onclick="alert(3)`}
	var b strings.Builder
	gridCell{Status: hostileStatus, Title: hostileTitle, URL: explainPath(7, `t"/<b>`)}.writeHTML(&b)
	runCell{ID: 7, Status: hostileStatus, Title: hostileTitle}.writeHTML(&b)
	out := b.String()
	for _, raw := range []string{"<script", "<img", `" onclick`, "'", "<b>"} {
		if strings.Contains(out, raw) {
			t.Errorf("the cells hold %q unescaped:\n%s", raw, out)
		}
	}
	for _, want := range []string{
		`<td><a class="cell st-ok&#34; onclick=&#34;alert(3)" href="/runs/7/tasks/t%22%2F%3Cb%3E" title="&#34;&gt;&lt;script&gt;alert(1)&lt;/script&gt;&lt;a title=&#39;"`,
		`<span aria-hidden="true">&lt;img src=x onerror=alert(2)&gt;</span></a></td>`,
		`<a class="sq st-ok&#34; onclick=&#34;alert(3)" href="/runs/7" title="&#34;&gt;&lt;script&gt;`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the cells lack %s:\n%s", want, out)
		}
	}
}
