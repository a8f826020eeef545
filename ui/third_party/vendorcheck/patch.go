package main

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// A filePatch is one file's part of a unified diff (`diff -u`): the file it edits and its
// hunks. Only edits of a file both sides have are supported, as the vendored patches are.
type filePatch struct {
	name  string
	hunks []hunk
}

// A hunk replaces old (at oldStart, 1-based) with new (at newStart); each line keeps its "\n"
// unless the diff marked it "\ No newline at end of file".
type hunk struct {
	oldStart, newStart int
	old, new           []string
}

// parsePatch reads a unified diff. A file's name is the "+++" header's up to a tab or " (",
// without a "b/" in front: "tea.go (patched)", "b/tea.go<TAB>date" and "tea.go" name tea.go.
func parsePatch(data []byte) ([]filePatch, error) {
	lines := splitLines(data)
	var files []filePatch
	for i := 0; i < len(lines); {
		l := lines[i]
		switch {
		case strings.HasPrefix(l, "+++ "):
			name := strings.TrimSuffix(strings.TrimPrefix(l, "+++ "), "\n")
			name, _, _ = strings.Cut(name, "\t")
			name, _, _ = strings.Cut(name, " (")
			name = strings.TrimPrefix(strings.TrimSpace(name), "b/")
			if name == "" || name == "/dev/null" {
				return nil, fmt.Errorf("line %d: only edits of a file are supported, not %q", i+1, l)
			}
			files = append(files, filePatch{name: name})
			i++
		case strings.HasPrefix(l, "@@ "):
			if len(files) == 0 {
				return nil, fmt.Errorf("line %d: a hunk before any +++ header", i+1)
			}
			h, n, err := parseHunk(lines[i:])
			if err != nil {
				return nil, fmt.Errorf("line %d: %v", i+1, err)
			}
			f := &files[len(files)-1]
			f.hunks = append(f.hunks, h)
			i += n
		default: // "diff ...", "--- ...", "Only in ..." and other prose between files
			i++
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no file in it (no +++ header)")
	}
	return files, nil
}

// parseHunk reads the hunk at lines[0] ("@@ -a,b +c,d @@") and says how many lines it took.
func parseHunk(lines []string) (hunk, int, error) {
	var h hunk
	f := strings.Fields(lines[0])
	if len(f) < 4 || f[3] != "@@" {
		return h, 0, fmt.Errorf("bad hunk header %q", strings.TrimSpace(lines[0]))
	}
	oldStart, oldN, err1 := rangeOf(f[1], "-")
	newStart, newN, err2 := rangeOf(f[2], "+")
	if err1 != nil || err2 != nil {
		return h, 0, fmt.Errorf("bad hunk header %q", strings.TrimSpace(lines[0]))
	}
	h.oldStart, h.newStart = oldStart, newStart
	i, last := 1, byte(0)
	for ; i < len(lines) && (len(h.old) < oldN || len(h.new) < newN || strings.HasPrefix(lines[i], `\`)); i++ {
		l := lines[i]
		if l == "\n" { // an empty context line whose space an editor ate
			l = " \n"
		}
		switch l[0] {
		case ' ':
			h.old, h.new = append(h.old, l[1:]), append(h.new, l[1:])
		case '-':
			h.old = append(h.old, l[1:])
		case '+':
			h.new = append(h.new, l[1:])
		case '\\': // "\ No newline at end of file": the line before has none
			if last == ' ' || last == '-' {
				h.old[len(h.old)-1] = strings.TrimSuffix(h.old[len(h.old)-1], "\n")
			}
			if last == ' ' || last == '+' {
				h.new[len(h.new)-1] = strings.TrimSuffix(h.new[len(h.new)-1], "\n")
			}
		default:
			return h, 0, fmt.Errorf("hunk ends early, at %q", strings.TrimSpace(l))
		}
		last = l[0]
	}
	if len(h.old) != oldN || len(h.new) != newN {
		return h, 0, fmt.Errorf("hunk %q is cut short", strings.TrimSpace(lines[0]))
	}
	return h, i, nil
}

func rangeOf(s, sign string) (start, n int, err error) {
	s, ok := strings.CutPrefix(s, sign)
	if !ok {
		return 0, 0, fmt.Errorf("no %s", sign)
	}
	a, b, found := strings.Cut(s, ",")
	if start, err = strconv.Atoi(a); err != nil {
		return 0, 0, err
	}
	n = 1
	if found {
		n, err = strconv.Atoi(b)
	}
	return start, n, err
}

// apply applies a file's hunks to src, as patch(1) without fuzz: each hunk's old lines must be
// there exactly, at the line it names or (nearest first) shifted as far as the file allows.
// reverse applies it backwards (new lines are replaced by the old), which succeeds on a text
// that already has the change.
func (fp filePatch) apply(src []byte, reverse bool) ([]byte, error) {
	lines := splitLines(src)
	var out []string
	next, offset := 0, 0 // next: first line not yet copied to out
	var failed []string
	for i, h := range fp.hunks {
		start, from, to := h.oldStart, h.old, h.new
		if reverse {
			start, from, to = h.newStart, h.new, h.old
		}
		want := start - 1 + offset
		if len(from) == 0 { // a pure insertion names the line after which it goes
			want = start + offset
		}
		at := find(lines, from, want, next)
		if at < 0 {
			failed = append(failed, fmt.Sprintf("%d (@@ -%d +%d @@)", i+1, h.oldStart, h.newStart))
			continue
		}
		offset += at - want
		out = append(out, lines[next:at]...)
		out = append(out, to...)
		next = at + len(from)
	}
	if len(failed) > 0 {
		return nil, fmt.Errorf("%d of %d hunks do not match the file: %s", len(failed), len(fp.hunks), strings.Join(failed, ", "))
	}
	out = append(out, lines[next:]...)
	return []byte(strings.Join(out, "")), nil
}

// find returns the position at or after min nearest to want where lines holds block, or -1.
func find(lines, block []string, want, min int) int {
	matches := func(at int) bool {
		if at < min || at+len(block) > len(lines) {
			return false
		}
		for j, b := range block {
			if lines[at+j] != b {
				return false
			}
		}
		return true
	}
	for d := 0; d <= len(lines); d++ {
		if matches(want - d) {
			return want - d
		}
		if d > 0 && matches(want+d) {
			return want + d
		}
	}
	return -1
}

// splitLines splits after each "\n"; the last line may have none.
func splitLines(b []byte) []string {
	var lines []string
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			lines = append(lines, string(b))
			break
		}
		lines = append(lines, string(b[:i+1]))
		b = b[i+1:]
	}
	return lines
}
