package tesslate

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const corpus = "../../testdata/tesslate"

func readCorpus(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(corpus, name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestCorpus(t *testing.T) {
	tests := []struct {
		file      string
		command   string
		port      int // Spec.Port
		explicit  bool
		resolved  int // ResolvePort(1234)
		inferred  int
		framework []Field
		stack     []string
	}{
		{
			file: "vite-react-fastapi.md",
			command: "cd backend && pip install -r requirements.txt && uvicorn main:app --host 0.0.0.0 --port 8001 --reload &\n" +
				"\n" +
				"cd frontend && npm install && npm run dev -- --host 0.0.0.0 --port 5173",
			port: 5173, explicit: true, resolved: 5173, inferred: 5173,
			framework: []Field{{"Frontend", "Vite + React"}, {"Backend", "FastAPI (Python)"}, {"Port", "5173"}},
			stack:     []string{"Vite", "React 18", "TypeScript", "FastAPI", "Python 3.11+"},
		},
		{
			file:     "nextjs.md",
			command:  "bun run dev -- --hostname 0.0.0.0 --port 3000",
			resolved: 3000, inferred: 3000,
			framework: []Field{{"Framework", "Next.js"}, {"Version", "16.1"}},
			stack:     []string{"Next.js 16.1", "React 19.2", "TypeScript 5.9", "Tailwind CSS v4.2", "App Router"},
		},
		{
			file:     "fastapi.md",
			command:  "pip install --user -r requirements.txt\nuvicorn main:app --host 0.0.0.0 --port \"${PORT:-8000}\" --reload",
			resolved: 8000, inferred: 8000,
			framework: []Field{{"Framework", "FastAPI"}, {"Language", "Python 3.12"}, {"Server", "uvicorn"}},
			stack:     []string{"FastAPI", "SQLAlchemy 2", "Pydantic v2"},
		},
		{
			file:     "vite-react-inferred.md",
			command:  "npm install\nnpm run dev -- --host 0.0.0.0 --port 5173",
			resolved: 5173, inferred: 5173,
			framework: []Field{{"Framework", "Vite + React"}, {"Version", "React 18"}},
			stack:     []string{"React 18 with Vite", "Tailwind CSS", "React Router DOM v6 (pre-configured in `src/App.jsx`)"},
		},
		{
			file: "multiline-comments.md",
			command: "cd backend\ngo mod download\nair &\n\ncd ../frontend && \\\n" +
				"  npm install && \\\n  npm run dev -- --host 0.0.0.0 --port 5173",
			resolved: 5173, inferred: 5173,
			framework: []Field{{"Frontend", "Vite + React"}, {"Backend", "Go + Chi Router"}},
			stack:     []string{"Vite", "Go 1.22"},
		},
		{
			file:    "port-override.md",
			command: "npm run dev -- --hostname 0.0.0.0 --port 4000",
			port:    4000, explicit: true, resolved: 4000, inferred: 3000,
			framework: []Field{{"Framework", "Next.js"}, {"Styling", "Tailwind CSS"}},
		},
		{
			file:      "no-command.md",
			command:   "",
			resolved:  1234,
			framework: []Field{{"Framework", "Plain HTML"}},
		},
		{
			file:     "heading-variants.md",
			command:  "echo start",
			resolved: 5173, inferred: 5173,
			framework: []Field{{"Frontend", "Svelte"}, {"Bundler", "Vite"}},
			stack:     []string{"SvelteKit", "Vite"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data := readCorpus(t, tt.file)
			crlf := bytes.ReplaceAll(data, []byte("\n"), []byte("\r\n"))
			for _, variant := range []struct {
				name string
				data []byte
			}{{"lf", data}, {"crlf", crlf}} {
				s, err := Parse(variant.data)
				if err != nil {
					t.Fatalf("%s: %v", variant.name, err)
				}
				if s.StartupCommand != tt.command {
					t.Errorf("%s: command\n got %q\nwant %q", variant.name, s.StartupCommand, tt.command)
				}
				if s.Port != tt.port || s.PortExplicit != tt.explicit {
					t.Errorf("%s: port %d explicit %v, want %d %v", variant.name, s.Port, s.PortExplicit, tt.port, tt.explicit)
				}
				if got := s.ResolvePort(1234); got != tt.resolved {
					t.Errorf("%s: ResolvePort(1234) = %d, want %d", variant.name, got, tt.resolved)
				}
				if got := s.InferredPort(); got != tt.inferred {
					t.Errorf("%s: InferredPort = %d, want %d", variant.name, got, tt.inferred)
				}
				if !reflect.DeepEqual(s.Framework, tt.framework) {
					t.Errorf("%s: framework\n got %q\nwant %q", variant.name, s.Framework, tt.framework)
				}
				if !reflect.DeepEqual(s.TechStack, tt.stack) {
					t.Errorf("%s: tech stack\n got %q\nwant %q", variant.name, s.TechStack, tt.stack)
				}
			}
		})
	}
}

// A **Port** that is not a number is no error of Parse: it fails only the start that needs it.
func TestCorpusPortPlaceholder(t *testing.T) {
	s, err := Parse(readCorpus(t, "broken-bad-port.md"))
	if err != nil {
		t.Fatal(err)
	}
	err = s.CheckPort(0)
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Line != 6 || !strings.Contains(pe.Msg, `port "auto" is not a number`) {
		t.Fatalf("CheckPort(0) = %v, want line 6 saying the port is not a number", err)
	}
	if err := s.CheckPort(5173); err != nil {
		t.Fatalf("CheckPort(5173) = %v, want nil: the container has a port of its own", err)
	}
}

func TestCorpusErrors(t *testing.T) {
	tests := []struct {
		file string
		line int
		msg  string // substring
	}{
		{"broken-unterminated.md", 9, "unterminated code fence opened here; close it with ```"},
		{"broken-port-range.md", 5, `port "70000" is out of range`},
		{"broken-non-utf8.md", 5, "not valid UTF-8 (byte 0xe9"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			_, err := Parse(readCorpus(t, tt.file))
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v (%T), want *ParseError", err, err)
			}
			if pe.Line != tt.line || !strings.Contains(pe.Msg, tt.msg) {
				t.Fatalf("got line %d %q, want line %d containing %q", pe.Line, pe.Msg, tt.line, tt.msg)
			}
		})
	}
}

func TestErrorString(t *testing.T) {
	err := &ParseError{Line: 12, Msg: "unterminated code fence opened here; close it with ```"}
	if got, want := err.Error(), "TESSLATE.md line 12: unterminated code fence opened here; close it with ```"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if got, want := (&ParseError{Msg: "too big"}).Error(), "TESSLATE.md: too big"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestSize(t *testing.T) {
	// Exactly the limit is fine: the limit is "over 1 MiB".
	line := "filler text that is not a heading\n"
	atLimit := bytes.Repeat([]byte("x"), MaxSize-len(line))
	atLimit = append(atLimit, line...)
	if _, err := Parse(atLimit); err != nil {
		t.Fatalf("file of exactly MaxSize: %v", err)
	}
	_, err := Parse(append(atLimit, 'x'))
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Line != 0 || !strings.Contains(pe.Msg, "1 MiB") {
		t.Fatalf("oversize: got %v, want a whole-file *ParseError about 1 MiB", err)
	}
}

func TestParseCases(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		command string
		port    int
		errLine int // > 0: want an error on this line
		errMsg  string
		// placeholderLine > 0: want no error but a PortProblem on this line (a **Port** that
		// is not a number blocks only a start that needs the file's port).
		placeholderLine int
	}{
		{name: "empty", in: ""},
		{name: "bom", in: "\ufeff## Development Server\n```bash\nnpm start\n```\n", command: "npm start"},
		{name: "lone CR", in: "## Development Server\r```bash\rnpm i\rnpm start\r```\r", command: "npm i\nnpm start"},
		{name: "sh and shell info", in: "## Development Server\n```shell title=\"dev\"\nmake dev\n```\n", command: "make dev"},
		{name: "unlabelled fence is not the command", in: "## Development Server\n```\nls\n```\n```bash\nnpm start\n```\n", command: "npm start"},
		{name: "other language is not the command", in: "## Development Server\n```python\nprint(1)\n```\n"},
		{name: "first bash block wins even if only comments", in: "## Development Server\n```bash\n# TODO\n```\n```bash\npkill vite\n```\n", command: ""},
		{name: "bash block before the section", in: "```bash\nnpm i\n```\n## Development Server\n```bash\nnpm start\n```\n", command: "npm start"},
		{name: "sibling heading ends the section", in: "## Development Server\nSee below.\n## Build\n```bash\nnpm run build\n```\n"},
		{name: "sub-heading stays in the section", in: "## Development Server\n### Start\n```bash\nnpm start\n```\n", command: "npm start"},
		{name: "heading inside a fence", in: "## Notes\n```md\n## Development Server\n```\n```bash\nnope\n```\n"},
		{name: "closing fence must match the char", in: "## Development Server\n~~~bash\nnpm start\n```\n~~~\n", command: "npm start\n```"},
		{name: "longer closing fence", in: "## Development Server\n````bash\nnpm start\n``````\n", command: "npm start"},
		{name: "shorter fence does not close", in: "## Development Server\n````bash\na\n```\n", errLine: 2, errMsg: "close it with ````"},
		{name: "inline triple backticks are not a fence", in: "Run ```ls``` here.\n```ls``` too\n## Development Server\n```bash\nls\n```\n", command: "ls"},
		{name: "tilde unterminated", in: "a\n~~~\nb\n", errLine: 2, errMsg: "close it with ~~~"},
		{name: "seven hashes is not a heading", in: "####### Development Server\n```bash\nx\n```\n"},
		{name: "port forms", in: "**Port:** 8080\n", port: 8080},
		{name: "port list item", in: "* **Port**: 8081\n", port: 8081},
		{name: "port with note", in: "**Port**: `5173` (Vite default)\n", port: 5173},
		{name: "port in fence is ignored", in: "```md\n**Port**: nope\n```\n"},
		{name: "port empty", in: "x\n**Port**:\n", placeholderLine: 2, errMsg: "no value"},
		{name: "port zero", in: "**Port**: 0\n", errLine: 1, errMsg: "out of range"},
		{name: "port huge", in: "**Port**: 99999999999999999999999\n", errLine: 1, errMsg: "out of range"},
		{name: "port negative", in: "**Port**: -1\n", errLine: 1, errMsg: "out of range"},
		{name: "port negative after others", in: "# App\n\n**Port**: 3000\n* **Port**: `-5` (old)\n", errLine: 4, errMsg: `port "-5" is out of range`},
		{name: "a dash alone is a placeholder", in: "**Port**: -\n", placeholderLine: 1, errMsg: "not a number"},
		{name: "template placeholder", in: "**Port**: [Specify: the port your server uses]\n", placeholderLine: 1, errMsg: "not a number"},
		{name: "later bad port is reported", in: "**Port**: 3000\n**Port**: abc\n", port: 3000, placeholderLine: 2},
		{name: "prose mention is not a port", in: "The **Port** is set by the platform.\n"},
		{name: "NUL byte", in: "a\nb\x00\n", errLine: 2, errMsg: "NUL"},
		{name: "invalid UTF-8 after CRLF lines", in: "a\r\nb\r\n\xff\r\n", errLine: 3, errMsg: "UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse([]byte(tt.in))
			if tt.errLine > 0 {
				var pe *ParseError
				if !errors.As(err, &pe) || pe.Line != tt.errLine || !strings.Contains(pe.Msg, tt.errMsg) {
					t.Fatalf("got %v, want an error on line %d containing %q", err, tt.errLine, tt.errMsg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.placeholderLine > 0 {
				pp := s.PortProblem
				if pp == nil || pp.Line != tt.placeholderLine || !strings.Contains(pp.Msg, tt.errMsg) {
					t.Fatalf("PortProblem = %v, want one on line %d containing %q", pp, tt.placeholderLine, tt.errMsg)
				}
				if err := s.CheckPort(8080); err != nil {
					t.Errorf("CheckPort with a port of the container's own: %v", err)
				}
				if err := s.CheckPort(0); (err != nil) == s.PortExplicit {
					t.Errorf("CheckPort(0) = %v with PortExplicit %v", err, s.PortExplicit)
				}
			} else if s.PortProblem != nil {
				t.Fatalf("unexpected PortProblem %v", s.PortProblem)
			}
			if s.StartupCommand != tt.command {
				t.Errorf("command %q, want %q", s.StartupCommand, tt.command)
			}
			if s.Port != tt.port || s.PortExplicit != (tt.port != 0) {
				t.Errorf("port %d explicit %v, want %d", s.Port, s.PortExplicit, tt.port)
			}
		})
	}
}

func TestResolvePort(t *testing.T) {
	fw := func(v ...string) Spec {
		var s Spec
		for _, x := range v {
			s.Framework = append(s.Framework, Field{"Framework", x})
		}
		return s
	}
	tests := []struct {
		name   string
		spec   Spec
		stored int
		want   int
	}{
		{"explicit beats inference and stored", Spec{Port: 4000, PortExplicit: true, Framework: []Field{{"F", "Next.js"}}}, 9000, 4000},
		{"next before react", fw("Next.js", "React 19"), 0, 3000},
		{"react after next in text still next", fw("React 19 + Next.js 15"), 0, 3000},
		{"nextjs spelled together", fw("NextJS"), 0, 3000},
		{"vite", fw("Vite + Vue"), 0, 5173},
		{"react", fw("React"), 0, 5173},
		{"vite frontend beats fastapi backend", fw("FastAPI", "Vite + React"), 0, 5173},
		{"fastapi", fw("FastAPI (Python)"), 0, 8000},
		{"uvicorn", fw("Starlette on Uvicorn"), 0, 8000},
		{"django", fw("Django 5"), 0, 8000},
		{"flask", fw("Flask"), 0, 5000},
		{"express", fw("Express.js"), 0, 3000},
		{"angular", fw("Angular 18"), 0, 4200},
		{"astro", fw("Astro"), 0, 4321},
		{"nuxt before vue", fw("Nuxt 3 (Vue)"), 0, 3000},
		{"whole words only", fw("nextauth, reactive streams, preact-ish"), 0, 0},
		{"nothing inferable uses stored", fw("Go + Chi Router"), 8080, 8080},
		{"node alone is not inferred", fw("Node.js"), 4000, 4000},
		{"bad stored port falls back to default", fw("Go"), 70000, DefaultPort},
		{"nothing at all", Spec{}, 0, DefaultPort},
		{"tech stack when framework says nothing", Spec{Framework: []Field{{"Language", "TypeScript"}}, TechStack: []string{"Vite", "Tailwind"}}, 0, 5173},
		{"framework beats tech stack", Spec{Framework: []Field{{"Framework", "FastAPI"}}, TechStack: []string{"React"}}, 0, 8000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.want
			if want == 0 {
				want = tt.stored
				if want == 0 {
					want = DefaultPort
				}
			}
			if got := tt.spec.ResolvePort(tt.stored); got != want {
				t.Fatalf("ResolvePort(%d) = %d, want %d", tt.stored, got, want)
			}
		})
	}
}

func TestFrameworkValue(t *testing.T) {
	s, err := Parse(readCorpus(t, "vite-react-fastapi.md"))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.FrameworkValue("frontend"); got != "Vite + React" {
		t.Errorf("frontend = %q", got)
	}
	if got := s.FrameworkValue(" BACKEND "); got != "FastAPI (Python)" {
		t.Errorf("backend = %q", got)
	}
	if got := s.FrameworkValue("database"); got != "" {
		t.Errorf("database = %q, want empty", got)
	}
}

func TestLongFenceMessage(t *testing.T) {
	_, err := Parse([]byte("x\n" + strings.Repeat("`", 5000) + "\n"))
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Line != 2 || len(pe.Msg) > 120 {
		t.Fatalf("got %v, want a short message on line 2", err)
	}
}

func TestTechStackForms(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"**Tech Stack**: Next.js, React ,, Tailwind\n", []string{"Next.js", "React", "Tailwind"}},
		{"**Tech Stack:**\n\n- a\n\n- b\n  - detail\nprose\n- not part\n", []string{"a", "b"}},
		{"**Tech Stack:**\nprose first\n- not part\n", nil},
		{"## Tech Stack\nBuilt on:\n\n* a\n+ b\n## Next\n- c\n", []string{"a", "b"}},
		{"**Tech Stack:**\n- first\n## Tech Stack\n- second\n", []string{"first"}},
	}
	for _, tt := range tests {
		s, err := Parse([]byte(tt.in))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(s.TechStack, tt.want) {
			t.Errorf("%q: got %q, want %q", tt.in, s.TechStack, tt.want)
		}
	}
}
