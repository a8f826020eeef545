package logfile

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestTailOffset(t *testing.T) {
	dir := t.TempDir()
	var big strings.Builder
	for i := range 200000 {
		fmt.Fprintf(&big, "line %d %s\n", i, strings.Repeat("x", i%97))
	}
	cases := []struct {
		content string
		n       int
		want    string
	}{
		{"", 3, ""},
		{"a\nb\nc\n", 2, "b\nc\n"},
		{"a\nb\nc", 2, "b\nc"},
		{"a\nb\nc\n", 3, "a\nb\nc\n"},
		{"a\nb\nc\n", 10, "a\nb\nc\n"},
		{"\n\n\n", 2, "\n\n"},
		{"only", 1, "only"},
		{big.String(), 3, "line 199997 " + strings.Repeat("x", 199997%97) + "\nline 199998 " + strings.Repeat("x", 199998%97) + "\nline 199999 " + strings.Repeat("x", 199999%97) + "\n"},
	}
	for i, tc := range cases {
		p := filepath.Join(dir, strconv.Itoa(i))
		if err := os.WriteFile(p, []byte(tc.content), 0o644); err != nil {
			t.Fatal(err)
		}
		fh, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		off, _, err := TailOffset(fh, int64(len(tc.content)), tc.n)
		fh.Close()
		if err != nil || tc.content[off:] != tc.want {
			t.Errorf("case %d: tail %d = %q, %v; want %q", i, tc.n, tc.content[off:], err, tc.want)
		}
	}
	// Every boundary of the block size, for the last 1..5 lines.
	var lines []string
	for i := range 40000 {
		lines = append(lines, strconv.Itoa(i))
	}
	content := strings.Join(lines, "\n") + "\n"
	p := filepath.Join(dir, "blocks")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	fh, _ := os.Open(p)
	defer fh.Close()
	for n := 1; n <= 40000; n += 997 {
		off, _, err := TailOffset(fh, int64(len(content)), n)
		want := strings.Join(lines[len(lines)-n:], "\n") + "\n"
		if err != nil || content[off:] != want {
			t.Fatalf("tail %d of the block file wrong (%d bytes, want %d)", n, len(content)-int(off), len(want))
		}
	}
}
