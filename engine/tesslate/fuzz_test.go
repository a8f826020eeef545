package tesslate

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func FuzzParse(f *testing.F) {
	files, err := filepath.Glob(filepath.Join(corpus, "*.md"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no corpus in %s: %v", corpus, err)
	}
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		"", "\ufeff", "```", "~~~bash\n", "## Development Server\n   ```bash\n   a\n  b\n```\n",
		"**Port**: 65535\n**Port:** 1\n", "**Tech Stack**:\n- a\n  - b\n- c\nx\n",
		"#\n##\n###### Development Server ######\n```sh\n#x\n\n y\n\n```\n",
		"a\r\rb\r\n\n", "__Port__ : 8000 (uvicorn)\n",
	} {
		f.Add([]byte(s))
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data)
		checkResult(t, data, s, err)

		// Parsing is a function of the text alone.
		s2, err2 := Parse(data)
		sameResult(t, "second parse", s, err, s2, err2)

		// Line endings and a final newline never change the meaning.
		if !bytes.ContainsRune(data, '\r') {
			crlf := bytes.ReplaceAll(data, []byte("\n"), []byte("\r\n"))
			if len(crlf) <= MaxSize {
				s3, err3 := Parse(crlf)
				sameResult(t, "CRLF", s, err, s3, err3)
			}
		}
		if len(data) < MaxSize {
			s4, err4 := Parse(append(bytes.Clone(data), '\n'))
			sameResult(t, "final newline", s, err, s4, err4)
		}
	})
}

// countLines counts lines the way an editor shows them, independently of the parser's splitter.
func countLines(data []byte) int {
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	n := 0
	for i := 0; i < len(data); i++ {
		if data[i] == '\n' || data[i] == '\r' {
			n++
			if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
				i++
			}
		}
	}
	if len(data) > 0 && data[len(data)-1] != '\n' && data[len(data)-1] != '\r' {
		n++
	}
	return n
}

func checkResult(t *testing.T, data []byte, s Spec, err error) {
	t.Helper()
	if err != nil {
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Fatalf("error %v is %T, want *ParseError", err, err)
		}
		if pe.Msg == "" || strings.ContainsAny(err.Error(), "\r\n") {
			t.Fatalf("error message not one non-empty line: %q", err.Error())
		}
		if (pe.Line == 0) != (len(data) > MaxSize) {
			t.Fatalf("line %d for a %d-byte file: only an oversize file is a whole-file error", pe.Line, len(data))
		}
		if n := countLines(data); pe.Line < 0 || pe.Line > n {
			t.Fatalf("error line %d outside the file's %d lines: %v", pe.Line, n, err)
		}
		if !reflect.DeepEqual(s, Spec{}) {
			t.Fatalf("error with a non-zero Spec: %+v", s)
		}
		return
	}

	// A successful parse implies the text was acceptable.
	if len(data) > MaxSize || !utf8.Valid(data) || bytes.IndexByte(data, 0) >= 0 {
		t.Fatalf("accepted a file that is oversize, not UTF-8 or has NUL")
	}
	// Every line of the script is a line of the file, less the fence's indentation. A set
	// keeps the check linear: a quadratic property check makes the fuzzer crawl on big inputs.
	fileLines := map[string]bool{}
	for _, l := range strings.FieldsFunc(string(data), func(r rune) bool { return r == '\n' || r == '\r' }) {
		fileLines[strings.TrimLeft(l, " \t")] = true
	}

	cmd := s.StartupCommand
	if strings.ContainsAny(cmd, "\r\x00") {
		t.Fatalf("command has CR or NUL: %q", cmd)
	}
	if cmd != "" {
		lines := strings.Split(cmd, "\n")
		if strings.TrimSpace(lines[0]) == "" || strings.TrimSpace(lines[len(lines)-1]) == "" {
			t.Fatalf("command starts or ends with a blank line: %q", cmd)
		}
		for _, l := range lines {
			if strings.HasPrefix(strings.TrimLeft(l, " \t"), "#") {
				t.Fatalf("command keeps a comment line %q: %q", l, cmd)
			}
			if strings.TrimSpace(l) != "" && !fileLines[strings.TrimLeft(l, " \t")] {
				t.Fatalf("command line %q is not in the file", l)
			}
		}
	}

	if s.PortExplicit != validPort(s.Port) || (!s.PortExplicit && s.Port != 0) {
		t.Fatalf("port %d explicit %v", s.Port, s.PortExplicit)
	}
	for _, stored := range []int{-1, 0, 1, 8080, 65536} {
		p := s.ResolvePort(stored)
		if !validPort(p) {
			t.Fatalf("ResolvePort(%d) = %d", stored, p)
		}
		if s.PortExplicit && p != s.Port {
			t.Fatalf("ResolvePort(%d) = %d, but the explicit port is %d", stored, p, s.Port)
		}
	}
	if p := s.InferredPort(); p != 0 && !validPort(p) {
		t.Fatalf("InferredPort = %d", p)
	}

	for _, f := range s.Framework {
		if f.Key == "" || f.Value == "" || f.Key != strings.TrimSpace(f.Key) || f.Value != strings.TrimSpace(f.Value) ||
			strings.ContainsAny(f.Key+f.Value, "\r\n") {
			t.Fatalf("bad framework field %q", f)
		}
		if s.FrameworkValue(f.Key) == "" {
			t.Fatalf("FrameworkValue(%q) is empty", f.Key)
		}
	}
	for _, item := range s.TechStack {
		if item == "" || item != strings.TrimSpace(item) || strings.ContainsAny(item, "\r\n") {
			t.Fatalf("bad tech stack item %q", item)
		}
	}
}

func sameResult(t *testing.T, what string, s1 Spec, err1 error, s2 Spec, err2 error) {
	t.Helper()
	if (err1 == nil) != (err2 == nil) {
		t.Fatalf("%s: error %v vs %v", what, err1, err2)
	}
	if err1 != nil {
		var p1, p2 *ParseError
		errors.As(err1, &p1)
		errors.As(err2, &p2)
		if p1 == nil || p2 == nil || *p1 != *p2 {
			t.Fatalf("%s: error %v vs %v", what, err1, err2)
		}
		return
	}
	if !reflect.DeepEqual(s1, s2) {
		t.Fatalf("%s: spec\n%+v\nvs\n%+v", what, s1, s2)
	}
}
