// Package tesslate parses TESSLATE.md, the project file that says how a container starts. Every
// runtime goes through this one parser so that the same text gives the same command and port in
// every deployment mode.
//
// The format is the one of the reference platform's templates:
//
//	## Framework Configuration
//
//	**Frontend**: Vite + React
//	**Port**: 5173
//
//	**Tech Stack:**
//	- React 18
//
//	## Development Server
//
//	```bash
//	cd frontend && npm run dev -- --host 0.0.0.0 --port 5173
//	```
//
// Where the format says nothing, the parser follows CommonMark closely enough that what a reader
// sees rendered is what runs: a "## x" inside a code fence is not a heading, a fence closes only
// with the same character, and a section runs until the next heading of the same or a higher level.
//
// Where even that leaves a choice, the choices are:
//   - The command is the first ```bash, ```sh or ```shell block of the Development Server section;
//     an unlabelled fence is not (templates use those for file trees). That block is the command
//     even when it holds only comments, so a later "Stop Command" block is never run on start.
//   - Comment lines (first non-blank character "#") are dropped from it, blank lines at its ends
//     trimmed, the fence's own indentation removed; everything else is kept byte for byte.
//   - **Port** counts at the start of a line (or list item) outside fences, not in running prose;
//     the first one wins, and every one must be a valid port.
//   - Only ATX headings (# ... ######) are headings; "##Title" without a space counts too, as it
//     did on the reference platform.
//   - The tech stack is the list after **Tech Stack:**, or the first list of a "## Tech Stack"
//     section, whichever comes first.
package tesslate

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxSize is the largest TESSLATE.md accepted. The file is human-written prose plus a few
// commands; anything bigger is a mistake (or an attack on the orchestrator's memory).
const MaxSize = 1 << 20

// DefaultPort is what ResolvePort falls back to when nothing else says anything.
const DefaultPort = 3000

// Field is one "**Key**: Value" line of the Framework Configuration section, as written.
type Field struct {
	Key   string
	Value string
}

// Spec is what a TESSLATE.md says about starting its container.
type Spec struct {
	// StartupCommand is run as one sh script; empty when the file has none (the container's own
	// command or the engine's default applies then).
	StartupCommand string
	// Port is the explicit "**Port**: N" (the first one in the file); 0 unless PortExplicit.
	Port         int
	PortExplicit bool
	// PortProblem is a **Port** that is not a number (a template's placeholder): no error of
	// Parse, since a container with a port of its own never needs it; see NeedPort.
	PortProblem *ParseError
	// Framework keeps the section's fields in file order; duplicates are kept too, so a caller
	// that shows the file to a human shows what is there.
	Framework []Field
	TechStack []string
}

// FrameworkValue is the value of the first Framework field named key (case-insensitive), or "".
func (s Spec) FrameworkValue(key string) string {
	key = strings.TrimSpace(key)
	for _, f := range s.Framework {
		if strings.EqualFold(f.Key, key) {
			return f.Value
		}
	}
	return ""
}

// CheckPort is PortProblem when the file's port is what the container would listen on (it has
// no port of its own, stored is 0, and the file names no explicit port before the placeholder).
func (s Spec) CheckPort(stored int) error {
	if s.PortProblem == nil || s.PortExplicit || validPort(stored) {
		return nil
	}
	return s.PortProblem
}

// ResolvePort is the port the container listens on: an explicit **Port** always wins, then the
// port the framework implies, then the container's stored port, then DefaultPort.
func (s Spec) ResolvePort(stored int) int {
	if s.PortExplicit && validPort(s.Port) {
		return s.Port
	}
	if p := s.InferredPort(); p > 0 {
		return p
	}
	if validPort(stored) {
		return stored
	}
	return DefaultPort
}

// ParseError is a TESSLATE.md the parser refuses. Line is 1-based; 0 means the whole file.
type ParseError struct {
	Line int
	Msg  string
	// placeholder: a **Port** that is not a number (a template's "[Specify: ...]").
	placeholder bool
}

func (e *ParseError) Error() string {
	if e.Line <= 0 {
		return "TESSLATE.md: " + e.Msg
	}
	return fmt.Sprintf("TESSLATE.md line %d: %s", e.Line, e.Msg)
}

func errorf(line int, format string, args ...any) *ParseError {
	return &ParseError{Line: line, Msg: fmt.Sprintf(format, args...)}
}

// Parse reads a TESSLATE.md. Errors are always *ParseError.
func Parse(data []byte) (Spec, error) {
	if len(data) > MaxSize {
		return Spec{}, errorf(0, "file is %d bytes, over the %d-byte (1 MiB) limit", len(data), MaxSize)
	}
	// Editors on Windows like to add a BOM; it is not part of the first heading.
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	lines := splitLines(data)
	for i, l := range lines {
		if err := checkText(l, i+1); err != nil {
			return Spec{}, err
		}
	}
	p := parser{lines: lines}
	return p.run()
}

// splitLines accepts \n, \r\n and a lone \r, as CommonMark does; a \r left in a line would end
// up in the shell script, where it breaks every command it touches.
func splitLines(data []byte) []string {
	var lines []string
	start := 0
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '\n':
			lines = append(lines, string(data[start:i]))
			start = i + 1
		case '\r':
			lines = append(lines, string(data[start:i]))
			if i+1 < len(data) && data[i+1] == '\n' {
				i++
			}
			start = i + 1
		}
	}
	if start < len(data) {
		lines = append(lines, string(data[start:]))
	}
	return lines
}

// checkText refuses what cannot be a text file: invalid UTF-8, and NUL, which no exec API can
// pass in an argument, so it would only fail later and further from its cause.
func checkText(line string, n int) *ParseError {
	for i := 0; i < len(line); {
		r, size := utf8.DecodeRuneInString(line[i:])
		if r == utf8.RuneError && size == 1 {
			return errorf(n, "not valid UTF-8 (byte 0x%02x at byte %d of the line); save the file as UTF-8", line[i], i+1)
		}
		if r == 0 {
			return errorf(n, "contains a NUL byte; TESSLATE.md must be a text file")
		}
		i += size
	}
	return nil
}

// parser walks the lines once. Sections are tracked by the level of the heading that opened them
// (0: not inside), so a sub-heading stays inside its section and a sibling ends it.
type parser struct {
	lines []string
	spec  Spec

	devLevel, fwLevel int

	commandFound bool

	stack stackState
}

type stackState struct {
	mode   int // stackNone, stackAwaitBold, stackAwaitSection, stackList
	indent int
	done   bool
}

const (
	stackNone = iota
	// After "**Tech Stack:**" only blank lines may come before the items.
	stackAwaitBold
	// Under a "## Tech Stack" heading prose may introduce the list.
	stackAwaitSection
	stackList
)

func (p *parser) run() (Spec, error) {
	for i := 0; i < len(p.lines); i++ {
		line := p.lines[i]
		if f, ok := openFence(line); ok {
			end, err := p.fence(i, f)
			if err != nil {
				return Spec{}, err
			}
			p.endStackList()
			i = end
			continue
		}
		if level, title, ok := heading(line); ok {
			p.enterSection(level, title)
			continue
		}
		if err := p.textLine(i, line); err != nil {
			return Spec{}, err
		}
	}
	return p.spec, nil
}

func (p *parser) enterSection(level int, title string) {
	if p.devLevel > 0 && level <= p.devLevel {
		p.devLevel = 0
	}
	if p.fwLevel > 0 && level <= p.fwLevel {
		p.fwLevel = 0
	}
	p.endStackList()
	switch title {
	case "development server":
		p.devLevel = level
	case "framework configuration":
		p.fwLevel = level
	case "tech stack":
		if !p.stack.done {
			p.stack.mode = stackAwaitSection
		}
	}
}

// endStackList closes a Tech Stack list (or the wait for one) at a structural boundary.
func (p *parser) endStackList() {
	switch p.stack.mode {
	case stackList:
		p.stack.done = true
		p.stack.mode = stackNone
	case stackAwaitBold, stackAwaitSection:
		p.stack.mode = stackNone
	}
}

func (p *parser) textLine(i int, line string) error {
	inStack := p.stack.mode != stackNone && p.techStackLine(line)
	key, value, ok := boldField(line)
	if !ok {
		return nil
	}
	lkey := strings.ToLower(key)
	// **Port** counts anywhere, even as an entry of a list.
	if lkey == "port" {
		port, err := parsePort(value, i+1)
		switch {
		case err != nil && err.placeholder:
			// The platform's own template ships "**Port**: [Specify: ...]". It blocks only a
			// start that needs the file's port (PortProblem); one with its own port goes on.
			if p.spec.PortProblem == nil {
				p.spec.PortProblem = err
			}
		case err != nil:
			return err
		case !p.spec.PortExplicit:
			// The first explicit port wins, as on the reference platform; later ones are still
			// checked so that a typo anywhere is reported rather than silently ignored.
			p.spec.Port, p.spec.PortExplicit = port, true
		}
	}
	if inStack {
		return nil
	}
	if lkey == "tech stack" && !p.stack.done {
		if value == "" {
			p.stack.mode = stackAwaitBold
		} else {
			// "**Tech Stack**: Next.js, React" says the same as a list, on one line.
			for _, item := range strings.Split(value, ",") {
				if item = strings.TrimSpace(item); item != "" {
					p.spec.TechStack = append(p.spec.TechStack, item)
				}
			}
			p.stack.done = len(p.spec.TechStack) > 0
		}
	}
	if p.fwLevel > 0 && value != "" {
		p.spec.Framework = append(p.spec.Framework, Field{Key: key, Value: value})
	}
	return nil
}

// techStackLine consumes line if it belongs to the Tech Stack list being read and reports whether
// it did. Items indented deeper than the first are details of an item, not entries of their own.
func (p *parser) techStackLine(line string) bool {
	if strings.TrimSpace(line) == "" {
		return p.stack.mode != stackNone
	}
	indent, item, isItem := listItem(line)
	switch p.stack.mode {
	case stackAwaitBold, stackAwaitSection:
		if !isItem {
			if p.stack.mode == stackAwaitBold {
				p.stack.mode = stackNone
			}
			return false
		}
		p.stack.mode = stackList
		p.stack.indent = indent
	case stackList:
		if !isItem || indent < p.stack.indent {
			p.stack.done = true
			p.stack.mode = stackNone
			return false
		}
		if indent > p.stack.indent {
			return true
		}
	}
	if item != "" {
		p.spec.TechStack = append(p.spec.TechStack, item)
	}
	return true
}

// fence consumes the fenced block opened at line i and returns the index of its closing line.
func (p *parser) fence(i int, f fenceOpen) (int, error) {
	capture := p.devLevel > 0 && !p.commandFound && isShellInfo(f.info)
	var body []string
	for j := i + 1; j < len(p.lines); j++ {
		if closesFence(p.lines[j], f) {
			if capture {
				// The first shell block is the command even when it holds only comments:
				// taking the next block instead could run the "Stop Command" on start.
				p.commandFound = true
				p.spec.StartupCommand = script(body, f.indent)
			}
			return j, nil
		}
		if capture {
			body = append(body, p.lines[j])
		}
	}
	// A fence can be any length; the message must stay one readable line.
	if f.length > 8 {
		return 0, errorf(i+1, "unterminated code fence opened here; close it with a line of %d or more %q", f.length, f.char)
	}
	return 0, errorf(i+1, "unterminated code fence opened here; close it with %s", strings.Repeat(string(f.char), f.length))
}

// script turns a fence body into the sh script: indentation the fence itself had is removed (a
// fence inside a list item), comment lines are dropped, and blank lines at either end trimmed.
// Inner lines are kept as written, trailing spaces too, since "\ " at a line end is shell syntax.
func script(body []string, indent int) string {
	var out []string
	for _, l := range body {
		l = trimIndent(l, indent)
		if strings.HasPrefix(strings.TrimLeft(l, " \t"), "#") {
			continue
		}
		out = append(out, l)
	}
	for len(out) > 0 && strings.TrimSpace(out[0]) == "" {
		out = out[1:]
	}
	for len(out) > 0 && strings.TrimSpace(out[len(out)-1]) == "" {
		out = out[:len(out)-1]
	}
	return strings.Join(out, "\n")
}

func trimIndent(l string, n int) string {
	i := 0
	for i < n && i < len(l) && (l[i] == ' ' || l[i] == '\t') {
		i++
	}
	return l[i:]
}

type fenceOpen struct {
	char   byte
	length int
	indent int
	info   string
}

// openFence recognises ``` and ~~~ fences. Any indentation is accepted because templates put
// fences inside list items; a backtick "fence" whose info string has a backtick is inline code
// (```ls``` in prose), as CommonMark says.
func openFence(line string) (fenceOpen, bool) {
	rest := strings.TrimLeft(line, " \t")
	indent := len(line) - len(rest)
	if len(rest) < 3 || (rest[0] != '`' && rest[0] != '~') {
		return fenceOpen{}, false
	}
	c := rest[0]
	n := 0
	for n < len(rest) && rest[n] == c {
		n++
	}
	if n < 3 {
		return fenceOpen{}, false
	}
	info := strings.TrimSpace(rest[n:])
	if c == '`' && strings.ContainsRune(info, '`') {
		return fenceOpen{}, false
	}
	return fenceOpen{char: c, length: n, indent: indent, info: info}, true
}

func closesFence(line string, f fenceOpen) bool {
	rest := strings.TrimLeft(line, " \t")
	n := 0
	for n < len(rest) && rest[n] == f.char {
		n++
	}
	return n >= f.length && strings.TrimSpace(rest[n:]) == ""
}

// isShellInfo: the format says "bash"; sh and shell mean the same to a reader and run the same
// under sh. An unlabelled fence is not a command: the templates use those for file trees.
func isShellInfo(info string) bool {
	word, _, _ := strings.Cut(info, " ")
	word, _, _ = strings.Cut(word, "\t")
	word = strings.ToLower(strings.Trim(word, "{}."))
	switch word {
	case "bash", "sh", "shell":
		return true
	}
	return false
}

// heading recognises ATX headings and normalises their title for comparison. Unlike CommonMark,
// "##Development Server" (no space) counts, because the reference platform accepted it.
func heading(line string) (level int, title string, ok bool) {
	indent := 0
	for indent < len(line) && indent < 4 && line[indent] == ' ' {
		indent++
	}
	if indent > 3 {
		return 0, "", false
	}
	rest := line[indent:]
	for level < len(rest) && rest[level] == '#' {
		level++
	}
	if level == 0 || level > 6 {
		return 0, "", false
	}
	text := strings.TrimSpace(rest[level:])
	// A closing run of #s is decoration, not title.
	if t := strings.TrimRight(text, "#"); t != text && (t == "" || strings.HasSuffix(t, " ") || strings.HasSuffix(t, "\t")) {
		text = t
	}
	return level, normTitle(text), true
}

func normTitle(s string) string {
	s = strings.TrimSpace(s)
	s = strings.TrimRight(s, ": \t")
	s = strings.Trim(s, "*_` \t")
	s = strings.TrimRight(s, ": \t")
	return strings.ToLower(strings.Join(strings.Fields(s), " "))
}

// boldField recognises "**Key**: Value", "**Key:** Value" and either one as a list item; the
// value may be empty (for "**Tech Stack:**").
func boldField(line string) (key, value string, ok bool) {
	s := strings.TrimLeft(line, " \t")
	if _, item, isItem := listItem(s); isItem {
		s = item
	}
	var delim string
	switch {
	case strings.HasPrefix(s, "**"):
		delim = "**"
	case strings.HasPrefix(s, "__"):
		delim = "__"
	default:
		return "", "", false
	}
	rest := s[len(delim):]
	end := strings.Index(rest, delim)
	if end <= 0 {
		return "", "", false
	}
	key = strings.TrimSpace(rest[:end])
	after := rest[end+len(delim):]
	if k, found := strings.CutSuffix(key, ":"); found {
		key = strings.TrimSpace(k)
		value = after
	} else {
		a := strings.TrimLeft(after, " \t")
		if !strings.HasPrefix(a, ":") {
			return "", "", false
		}
		value = a[1:]
	}
	if key == "" {
		return "", "", false
	}
	return key, strings.TrimSpace(value), true
}

// listItem recognises "- x", "* x" and "+ x" bullets; a bare marker is an empty item.
func listItem(line string) (indent int, item string, ok bool) {
	rest := strings.TrimLeft(line, " \t")
	indent = len(line) - len(rest)
	if rest == "" || (rest[0] != '-' && rest[0] != '*' && rest[0] != '+') {
		return 0, "", false
	}
	if len(rest) > 1 && rest[1] != ' ' && rest[1] != '\t' {
		return 0, "", false
	}
	return indent, strings.TrimSpace(rest[1:]), true
}

// parsePort accepts a number optionally followed by a note ("5173 (Vite default)") and wrapped in
// code or emphasis ("`5173`"), as humans write it.
func parsePort(value string, line int) (int, *ParseError) {
	v := strings.Trim(strings.TrimSpace(value), "`*_ \t")
	tok := v
	if i := strings.IndexAny(v, " \t"); i >= 0 {
		tok = v[:i]
	}
	tok = strings.Trim(strings.TrimRight(tok, ",;.)"), "`*_")
	if tok == "" {
		e := errorf(line, "**Port** has no value; write a number, e.g. **Port**: 5173")
		e.placeholder = true
		return 0, e
	}
	// A minus before digits is a number, one below the range, not a placeholder: refused,
	// rather than left to a start that may never look at it.
	digits := strings.TrimPrefix(tok, "-")
	if digits != tok && digits != "" && strings.Trim(digits, "0123456789") == "" {
		return 0, errorf(line, "port %s is out of range (1-65535); write a port from 1 to 65535, e.g. **Port**: 5173", quote(tok))
	}
	for i := 0; i < len(tok); i++ {
		if tok[i] < '0' || tok[i] > '9' {
			e := errorf(line, "port %s is not a number; write a number, e.g. **Port**: 5173", quote(tok))
			e.placeholder = true
			return 0, e
		}
	}
	n, err := strconv.Atoi(tok)
	if err != nil || !validPort(n) {
		return 0, errorf(line, "port %s is out of range (1-65535)", quote(tok))
	}
	return n, nil
}

// quote keeps a message on one line and short whatever the user wrote.
func quote(s string) string {
	const max = 40
	if utf8.RuneCountInString(s) > max {
		r := []rune(s)
		s = string(r[:max]) + "…"
	}
	return strconv.Quote(s)
}

func validPort(p int) bool { return p >= 1 && p <= 65535 }
