package ui

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

func (l *logsPane) startSearch() tea.Cmd {
	l.searching = true
	l.input.SetValue(l.query)
	l.input.CursorEnd()
	return l.input.Focus()
}

func (l *logsPane) updateSearch(msg tea.Msg) tea.Cmd {
	if k, ok := msg.(tea.KeyPressMsg); ok {
		switch {
		case key.Matches(k, l.keys.Accept):
			l.searching = false
			l.input.Blur()
			l.setQuery(l.input.Value())
			if l.re != nil {
				return l.jump(-1)
			}
			return nil
		case key.Matches(k, l.keys.Cancel):
			l.searching = false
			l.input.Blur()
			l.setQuery("")
			return nil
		}
	}
	var cmd tea.Cmd
	l.input, cmd = l.input.Update(msg)
	return cmd
}

// inputLine is the search or the filter while it is typed.
func (l *logsPane) inputLine() (string, *tea.Cursor, bool) {
	if l.filter.editing {
		return l.filter.inputLine()
	}
	if !l.searching {
		return "", nil, false
	}
	return l.input.View(), l.input.Cursor(), true
}

// paste goes into the search or the filter while it is typed.
func (l *logsPane) paste(msg tea.PasteMsg) tea.Cmd {
	switch {
	case l.filter.editing:
		return l.updateFilter(msg)
	case l.searching:
		return l.updateSearch(msg)
	}
	return nil
}

// setQuery compiles a search: a case-insensitive regular expression, or the text itself when
// it is not a valid one.
func (l *logsPane) setQuery(q string) {
	l.query = q
	l.re = nil
	l.hasCur = false
	defer l.reindex()
	if q == "" {
		return
	}
	re, err := regexp.Compile("(?i)" + q)
	if err != nil {
		re = regexp.MustCompile("(?i)" + regexp.QuoteMeta(q))
	}
	l.re = re
}

func (l *logsPane) whyMatch() string {
	if l.re == nil {
		return "no search (/ starts one)"
	}
	return ""
}

// jump makes the match older (dir -1) or newer (1) than the current one current and brings
// it to the middle of the screen, leaving follow so it stays put. Without a current match on
// screen (none yet, or scrolled away from it), n takes the newest match at or above the bottom
// line and N the oldest at or below the top one: no match on screen is skipped.
func (l *logsPane) jump(dir int) tea.Cmd {
	if l.re == nil || l.ring.len() == 0 {
		return nil
	}
	if l.hits.len() == 0 {
		return hintCmd(fmt.Sprintf("no match for /%s", l.query))
	}
	rows := max(l.h-1, 1)
	bottom := l.bottomPos()
	top := max(bottom-rows+1, 0)
	var i int
	if p := l.curPos(); p >= top && p <= bottom {
		i = l.hits.firstFrom(l.cur) + dir
	} else if dir < 0 {
		i = l.hits.lastUpTo(l.seqAt(max(bottom, 0)))
	} else {
		i = l.hits.firstFrom(l.seqAt(top))
	}
	if i < 0 || i >= l.hits.len() {
		return hintCmd(fmt.Sprintf("no %s match for /%s", map[int]string{-1: "older", 1: "newer"}[dir], l.query))
	}
	l.cur, l.hasCur = l.hits.at(i), true
	l.follow = false
	half := max(l.h-2, 1) / 2
	l.bottom = l.seqAt(min(l.posOf(l.cur)+half, l.shownLen()-1))
	return nil
}

// curPos is the position of the current match among the lines shown (-1 without one).
func (l *logsPane) curPos() int {
	if !l.hasCur {
		return -1
	}
	return l.posOf(l.cur)
}

// matchCount is the search's place in its matches, "3/12", or their number without a current one.
func (l *logsPane) matchCount() string {
	if l.hasCur {
		return fmt.Sprintf("%d/%d", l.hits.firstFrom(l.cur)+1, l.hits.len())
	}
	if l.hits.len() == 1 {
		return "1 match"
	}
	return fmt.Sprintf("%d matches", l.hits.len())
}

func (l *logsPane) whySave() string {
	if l.ring.len() == 0 {
		return "no lines yet"
	}
	return ""
}

// save asks where to write the lines held and writes them in the background. The file goes
// to the save directory (Options.SaveDir), not to wherever the console was started (under make
// run, the source tree); the prompt says where, and the status line gives the whole path.
func (l *logsPane) save() tea.Cmd {
	name := fmt.Sprintf("%s-%s-%s.log", l.proj.Slug, l.container, l.env.now.In(l.env.loc).Format("20060102-150405"))
	where := "the directory the console started in"
	if l.env.saveDir != "" {
		where = l.env.saveDir
	}
	body := []para{{text: fmt.Sprintf("Write the %d lines held to a file in %s (or an absolute path). An existing file is not overwritten.", l.ring.len(), where)}}
	saveDir := l.env.saveDir
	d := newPrompt(l.env, "Save log", "save", body, name, "file name", 4096, func(path string) tea.Cmd {
		path = strings.TrimSpace(path)
		if path == "" {
			return hintCmd("save: no file name")
		}
		lines := l.ring.lines()
		stamps, loc := l.stamps, l.env.loc
		return func() tea.Msg {
			if !filepath.IsAbs(path) && saveDir != "" {
				if err := os.MkdirAll(saveDir, 0o700); err != nil {
					return errMsg{err: fmt.Errorf("save log: make its directory: %w", err)}
				}
				path = filepath.Join(saveDir, path)
			}
			if abs, err := filepath.Abs(path); err == nil {
				path = abs // the status line says where it is wherever that is
			}
			n, err := writeLog(path, lines, stamps, loc)
			if err != nil {
				return errMsg{err: fmt.Errorf("save log: %w", err)}
			}
			return hintSaved(n, path)
		}
	})
	return msgCmd(openDialogMsg{d: d})
}

func hintSaved(n int, path string) tea.Msg {
	return infoMsg{text: fmt.Sprintf("saved %s to %s", plural(n, "line"), path)}
}

// infoMsg reports a finished piece of background work that is not an engine action.
type infoMsg struct{ text string }

func writeLog(path string, lines []logLine, stamps bool, loc *time.Location) (int, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriter(f)
	n := 0
	for _, ln := range lines {
		if ln.marker {
			continue
		}
		if stamps {
			w.WriteString(ln.at.In(loc).Format(time.RFC3339Nano) + " ")
		}
		w.WriteString(ln.text)
		w.WriteByte('\n')
		n++
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return 0, err
	}
	return n, f.Close()
}
