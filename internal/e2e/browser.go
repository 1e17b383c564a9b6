package e2e

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Browser starts Debian's chromium, headless (and without its sandbox: the
// tests run as root), with a window of width × height, and returns a tab
// and the errors, warnings and exceptions its pages write to the console
// or the browser log. It is closed when the test ends, or after
// 5 × Patience.
func Browser(t testing.TB, width, height int) (context.Context, func() []string) {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("the browser tests need Debian's chromium (scripts/test.sh installs it): %v", err)
	}
	opts := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]),
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.Headless, chromedp.DisableGPU,
		chromedp.WindowSize(width, height))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(alloc)
	ctx, cancelTime := context.WithTimeout(ctx, 5*Patience)
	t.Cleanup(func() { cancelTime(); cancelTab(); cancelAlloc() })

	var mu sync.Mutex
	var problems []string
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.IsException() || m.Type == "error" || m.Type == "warning" {
				mu.Lock()
				problems = append(problems, m.String())
				mu.Unlock()
			}
		}
	}()
	return ctx, func() []string {
		// One more round trip, so that what the pages wrote has arrived.
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[int]("1")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(problems)
	}
}

// Eval runs the action in the tab and returns its value, failing the test
// on error.
func Eval[T any](t testing.TB, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Do runs the steps in the tab, failing the test on error.
func Do(t testing.TB, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

// Screenshot saves a PNG of the whole page under the test's temporary
// folder and, when ETL_CRAFT_ARTIFACTS names a folder, there too; with
// ETL_CRAFT_DOC_IMAGES=1 it also refreshes docs/images/<name>. It returns
// the PNG.
func Screenshot(t testing.TB, ctx context.Context, name string) []byte {
	t.Helper()
	shot := Eval(t, ctx, chromedp.FullScreenshot(100))
	if len(shot) < 1000 || string(shot[1:4]) != "PNG" {
		t.Fatalf("the screenshot %s is no PNG (%d bytes)", name, len(shot))
	}
	dirs := []string{t.TempDir()}
	if d := os.Getenv("ETL_CRAFT_ARTIFACTS"); d != "" {
		dirs = append(dirs, d)
	}
	if os.Getenv("ETL_CRAFT_DOC_IMAGES") == "1" {
		dirs = append(dirs, DocImages(t))
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, name), shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("screenshot %s kept in %s", name, strings.Join(dirs, ", "))
	return shot
}

// DocImages is the repository's docs/images folder.
func DocImages(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "docs", "images")
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the test's folder")
		}
		dir = up
	}
}

// The loose comparison of a screenshot with the one docs/images holds:
// their top window (the part every screenshot of the page has) as a grid
// of cells, each the mean ink (darkness) of its pixels.
const (
	lookCols, lookRows = 32, 20
	// lookWindow is the height compared, in the screenshots' pixels.
	lookWindow = 800
	// A page with less ink on average below its top lookTop rows is empty;
	// two pages whose cells' inks differ by more than lookApart of the
	// reference's ink are not the same page.
	lookTop, lookInk, lookApart = 2, 0.01, 0.6
)

// LooksLike fails the test unless the screenshot shows a page, not an
// empty one, and looks like docs/images/<name> — loosely: the times, ids
// and lengths a page shows may differ, its layout may not. A screenshot
// being refreshed (ETL_CRAFT_DOC_IMAGES=1) is only checked not to be empty.
func LooksLike(t testing.TB, shot []byte, name string) {
	t.Helper()
	got := cells(t, shot, name)
	ink := 0.0
	for _, v := range got[lookTop*lookCols:] {
		ink += v / float64(len(got)-lookTop*lookCols)
	}
	if ink < lookInk {
		t.Errorf("the screenshot %s shows an empty page (its ink below the top is %.4f)", name, ink)
		return
	}
	if os.Getenv("ETL_CRAFT_DOC_IMAGES") == "1" {
		return
	}
	ref, err := os.ReadFile(filepath.Join(DocImages(t), name))
	if err != nil {
		t.Errorf("docs/images/%s is missing: run the test with ETL_CRAFT_DOC_IMAGES=1 to write it (%v)", name, err)
		return
	}
	want := cells(t, ref, name)
	var apart, total float64
	for i := range got {
		apart += math.Abs(got[i] - want[i])
		total += want[i]
	}
	if apart > lookApart*total {
		t.Errorf("the screenshot %s differs from docs/images/%s by %.2f of its ink (at most %.2f): the page changed; look at it, "+
			"and refresh the image with ETL_CRAFT_DOC_IMAGES=1 if it is right", name, name, apart/total, lookApart)
	}
}

// cells returns a PNG's top window as lookCols × lookRows mean inks, from
// 0 (white) to 1 (black).
func cells(t testing.TB, shot []byte, name string) []float64 {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("the screenshot %s: %v", name, err)
	}
	b := img.Bounds()
	window := image.Rect(b.Min.X, b.Min.Y, b.Max.X, min(b.Max.Y, b.Min.Y+lookWindow))
	sum := make([]float64, lookCols*lookRows)
	n := make([]float64, lookCols*lookRows)
	for y := window.Min.Y; y < window.Max.Y; y += 2 {
		for x := window.Min.X; x < window.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			cell := (y-window.Min.Y)*lookRows/window.Dy()*lookCols + (x-window.Min.X)*lookCols/window.Dx()
			sum[cell] += 1 - (0.299*float64(r)+0.587*float64(g)+0.114*float64(bl))/0xffff
			n[cell]++
		}
	}
	for i := range sum {
		if n[i] > 0 {
			sum[i] /= n[i]
		}
	}
	return sum
}
