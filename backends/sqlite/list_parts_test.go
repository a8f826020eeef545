package sqlite

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sailtui/sailtui/engine"
)

// TestListInPartsKeepsEveryProject reads the whole list in parts while the table changes
// under it in the ways that move the parts about in their shared array: projects deleted
// (gaps between the parts), and more projects added before the last part reads than its room
// holds (it grows elsewhere). Every live project is listed once.
func TestListInPartsKeepsEveryProject(t *testing.T) {
	rows, parts, starting := listPartRows, listParts, listPartStarting
	t.Cleanup(func() { listPartRows, listParts, listPartStarting = rows, parts, starting })
	listPartRows, listParts = 10, 3
	s := openTemp(t)
	ctx := t.Context()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	add := func(slug string) engine.Project {
		p := engine.Project{ID: uuid.NewString(), Slug: slug, Name: slug, Status: engine.StatusActive,
			LastActivity: at, CreatedAt: at, UpdatedAt: at}
		if err := s.CreateProject(ctx, p, nil, nil); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for i := range 60 {
		p := add(fmt.Sprintf("p%03d", i))
		if i%7 == 3 {
			if _, err := s.db.ExecContext(ctx, `UPDATE projects SET status = 'deleted' WHERE id = ?`, p.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	listPartStarting = func(part int) {
		if part == listParts-1 {
			for i := range 40 { // more than the last part's room (60/16+16)
				add(fmt.Sprintf("late%03d", i))
			}
		}
	}
	got, err := s.ListProjectsChangedSince(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	listPartStarting = nil
	want, err := s.ListProjects(ctx, engine.ProjectFilter{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, p := range got.Projects {
		seen[p.ID]++
		if p.Status == engine.StatusDeleted {
			t.Errorf("%s is deleted but listed", p.Slug)
		}
	}
	for _, p := range want {
		if seen[p.ID] != 1 {
			t.Errorf("%s is listed %d times, want once", p.Slug, seen[p.ID])
		}
	}
	if len(got.Projects) != len(want) {
		t.Errorf("listed %d projects, the store has %d live ones", len(got.Projects), len(want))
	}
}
