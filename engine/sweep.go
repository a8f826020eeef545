package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/sailtui/sailtui/engine/periodic"
)

// SweepOptions tunes one sweep.
type SweepOptions struct {
	DryRun bool
	// Idle overrides the engine's idle timeout for this sweep.
	Idle time.Duration
	// AsOf judges idleness and expiry as of this time instead of now.
	AsOf time.Time
	// StopIdle overrides the engine's first idle tier (stop containers, keep files).
	StopIdle time.Duration
	// Concurrency overrides the engine's sweep concurrency.
	Concurrency int
	// Limit caps how many projects one sweep takes on (0: no cap).
	Limit int
	// LeaveInterrupted lists operation kinds this sweep reports as skipped instead of
	// finishing when their holder died: a sweep running with least privilege (the kubernetes
	// sweeper may not create namespaces) leaves an interrupted wake or restore to the next
	// wake, which any operator's console or CLI runs, rather than failing on it every run.
	LeaveInterrupted []OpKind
	// Deadline stops the sweep taking new projects after this long (0: never). Unlike the end
	// of the sweep's context (SIGTERM), which also cuts the waits of the projects in flight
	// short, it lets them finish: a run stops claiming in time to end inside its slot.
	Deadline time.Duration
}

// claimContext is the context a sweep claims projects under: ctx, ended also by opts.Deadline.
func claimContext(ctx context.Context, opts SweepOptions) (context.Context, context.CancelFunc) {
	if opts.Deadline <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeoutCause(ctx, opts.Deadline, fmt.Errorf("deadline of %s", opts.Deadline))
}

// SweepItem is one project in a sweep summary.
type SweepItem struct {
	Slug   string `json:"slug"`
	ID     string `json:"id"`
	Reason string `json:"reason,omitempty"`
}

// SweepReport is the one-line JSON summary a sweep prints.
type SweepReport struct {
	Sweep      string      `json:"sweep"`
	DryRun     bool        `json:"dry_run"`
	AsOf       time.Time   `json:"as_of"`
	Idle       string      `json:"idle,omitempty"`
	Lock       LockState   `json:"lock"`
	Selected   int         `json:"selected"`
	Hibernated []SweepItem `json:"hibernated"`
	// Warned projects got an idle_warning: they will be hibernated once the warning is as
	// old as the engine's IdleWarning, unless used meanwhile.
	Warned []SweepItem `json:"warned"`
	// Stopped projects had their containers stopped by the first idle tier (files kept).
	Stopped   []SweepItem `json:"stopped"`
	Recovered []SweepItem `json:"recovered"`
	// Router is what the sweep read of the router's traffic (SAILTUI_ROUTER_METRICS_URL).
	Router  *RouterReport `json:"router,omitempty"`
	Skipped []SweepItem   `json:"skipped"`
	Failed  []SweepItem   `json:"failed"`
	// Deferred projects were selected but not started before the sweep was told to stop
	// (deadline, SIGTERM); the next sweep takes them.
	Deferred []SweepItem `json:"deferred"`
	// Purge results.
	Purged     []SweepItem `json:"purged"`
	FreedBytes int64       `json:"freed_bytes"`
	// FreedCapacityBytes is the volume capacity of purged snapshots whose data size their
	// Volumes cannot tell (CSI): what a restore of them would have needed, not bytes freed.
	FreedCapacityBytes int64 `json:"freed_capacity_bytes,omitempty"`
	// Leftovers is what the purge removed of writes that never finished (temporary archives
	// of killed writers, abandoned multipart uploads), when the volumes can tell.
	Leftovers *Leftovers `json:"leftovers,omitempty"`
	// StoppedEarly says why the sweep stopped before it was done, when its context ended
	// (SIGTERM, a deadline) at a point where nothing was left half-done: not a failure; what it
	// did is in the report and the next run goes on.
	StoppedEarly string `json:"stopped_early,omitempty"`
	DurationMS   int64  `json:"duration_ms"`
}

// newReport starts a sweep's summary with every list empty, not nil: whichever sweep ran, its
// JSON has the same shape, [] where nothing happened (never null).
func newReport(sweep string, dryRun bool, asOf time.Time) SweepReport {
	return SweepReport{Sweep: sweep, DryRun: dryRun, AsOf: asOf,
		Hibernated: []SweepItem{}, Warned: []SweepItem{}, Stopped: []SweepItem{}, Recovered: []SweepItem{}, Skipped: []SweepItem{},
		Failed: []SweepItem{}, Deferred: []SweepItem{}, Purged: []SweepItem{}}
}

// LockState is what a sweep found of its global lock, as the JSON summary and the metrics say it.
type LockState string

const (
	LockAcquired   LockState = "acquired"
	LockHeld       LockState = "held-by-another-sweep"
	LockDryRun     LockState = "not-taken (dry run)"
	LockNotStarted LockState = "not-taken (stopped)"
)

// stoppedEarly turns the error of a sweep whose own context ended (SIGTERM, --deadline) before
// it claimed anything (taking the lock, selecting) or after its projects were done into a
// report that says so: a sweep told to stop has not failed.
func stoppedEarly(ctx context.Context, rep *SweepReport, err *error) {
	if *err == nil || ctx.Err() == nil || !(errors.Is(*err, context.Canceled) || errors.Is(*err, context.DeadlineExceeded)) {
		return
	}
	rep.StoppedEarly = fmt.Sprintf("%v (%v)", context.Cause(ctx), *err)
	if rep.Lock == "" {
		rep.Lock = LockNotStarted
	}
	*err = nil
}

// OK is false when any project failed.
func (r SweepReport) OK() bool {
	return len(r.Failed) == 0 && (r.Router == nil || r.Router.Error == "")
}

// The global sweep locks: one hibernation sweep and one purge at a time per store. Overlapping
// sweeps would still be safe (claims are exactly-once); the lock makes the second exit early.
const (
	lockHibernate = "sweep-hibernate"
	lockPurge     = "sweep-purge"
)

// SweepHibernate finishes operations whose holder died, then hibernates every active project
// idle longer than the idle timeout, several at once.
func (e *Engine) SweepHibernate(ctx context.Context, opts SweepOptions) (rep SweepReport, err error) {
	start := time.Now()
	asOf := opts.AsOf
	if asOf.IsZero() {
		asOf = e.now()
	}
	idle := opts.Idle
	if idle == 0 {
		idle = e.cfg.IdleTimeout
	}
	if idle < 0 {
		return SweepReport{}, fmt.Errorf("sweep: idle timeout %s must be positive: %w", idle, ErrBadInput)
	}
	// stop is the sweep's own context: its end (SIGTERM) cuts the waits in flight short.
	stop := ctx
	ctx, cancel := claimContext(ctx, opts)
	defer cancel()
	rep = newReport("hibernate", opts.DryRun, asOf)
	rep.Idle = idle.String()
	defer func() { rep.DurationMS = time.Since(start).Milliseconds() }()
	defer stoppedEarly(ctx, &rep, &err)
	release, proceed, err := e.beginSweep(ctx, &rep, lockHibernate)
	if !proceed {
		return rep, err
	}
	defer release()

	// Stale operations first: they hold projects nothing else can touch.
	held, err := e.store.HeldProjects(ctx)
	if err != nil {
		return rep, fmt.Errorf("sweep: list held projects: %w", err)
	}
	for _, p := range held {
		if !e.stale(p) {
			continue
		}
		item := SweepItem{Slug: p.Slug, ID: p.ID, Reason: fmt.Sprintf("interrupted %s", p.OpKind)}
		if slices.Contains(opts.LeaveInterrupted, p.OpKind) {
			item.Reason = fmt.Sprintf("interrupted %s left for the next `sailtui project wake %s`", p.OpKind, p.Slug)
			rep.Skipped = append(rep.Skipped, item)
			continue
		}
		if opts.DryRun {
			rep.Recovered = append(rep.Recovered, item)
			continue
		}
		if _, err := e.resume(ctx, p); err != nil && !errors.Is(err, ErrTouched) {
			item.Reason = fmt.Sprintf("resume %s: %v", p.OpKind, err)
			rep.Failed = append(rep.Failed, item)
			continue
		}
		rep.Recovered = append(rep.Recovered, item)
	}

	// Requests through the router since the last sweep are activity, recorded before the
	// selection; traffic that cannot be read keeps every project up.
	router, known := e.routerActivity(ctx, opts.DryRun)
	rep.Router = router
	if !known {
		return rep, nil
	}
	cutoff := asOf.Add(-idle)
	idleProjects, err := e.store.IdleProjects(ctx, cutoff.Add(e.cfg.IdleWarning), asOf, opts.Limit)
	if err != nil {
		return rep, fmt.Errorf("sweep: select idle projects: %w", err)
	}
	if router != nil && opts.DryRun {
		idleProjects = slices.DeleteFunc(idleProjects, func(p Project) bool { return router.touched[p.ID] })
	}
	idleProjects = e.warnIdle(ctx, idleProjects, cutoff, asOf, &rep)
	rep.Selected = len(idleProjects)
	if opts.DryRun {
		for _, p := range idleProjects {
			rep.Hibernated = append(rep.Hibernated, SweepItem{Slug: p.Slug, ID: p.ID,
				Reason: fmt.Sprintf("idle since %s", p.LastActivity.Format(time.RFC3339))})
		}
	} else {
		e.hibernateMany(ctx, stop, idleProjects, cutoff, asOf, opts.Concurrency, &rep)
	}
	stopIdle := opts.StopIdle
	if stopIdle == 0 {
		stopIdle = e.cfg.StopIdleTimeout
	}
	if stopIdle > 0 && stopIdle < idle && ctx.Err() == nil {
		taken := map[string]bool{}
		for _, p := range idleProjects {
			taken[p.ID] = true
		}
		if err := e.stopIdle(ctx, stop, asOf.Add(-stopIdle), asOf, taken, opts, &rep); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// warnIdle gives an idle warning to every project of ps (idle past the timeout within the
// warning window) that has none standing, and returns those to hibernate now: idle past cutoff,
// warned at least the window before asOf. So no project is hibernated unwarned, or warned later
// than the window before, even after sweeps were missed: the sweep that finds it warns first
// and leaves it to a later one. With no warning window every project of ps is idle past cutoff.
func (e *Engine) warnIdle(ctx context.Context, ps []Project, cutoff, asOf time.Time, rep *SweepReport) []Project {
	window := e.cfg.IdleWarning
	if window <= 0 {
		return ps
	}
	var due []Project
	for _, p := range ps {
		hibernatesAt := p.LastActivity.Add(asOf.Sub(cutoff))
		if earliest := asOf.Add(window); earliest.After(hibernatesAt) {
			hibernatesAt = earliest
		}
		item := SweepItem{Slug: p.Slug, ID: p.ID}
		switch {
		case !p.IdleWarned():
			item.Reason = fmt.Sprintf("idle since %s; hibernates at %s unless used", p.LastActivity.Format(time.RFC3339), hibernatesAt.Format(time.RFC3339))
			if !rep.DryRun {
				if err := e.store.MarkIdleWarned(ctx, p.ID, asOf); err != nil {
					// Unrecorded, the warning would not hold the hibernation off: none is given.
					item.Reason = "idle warning: " + err.Error()
					rep.Failed = append(rep.Failed, item)
					continue
				}
				e.publish(ctx, Event{Time: asOf, ProjectID: p.ID, Slug: p.Slug, Kind: EventIdleWarning, Reason: item.Reason})
			}
			rep.Warned = append(rep.Warned, item)
		case !p.LastActivity.Before(cutoff) || p.IdleWarnedAt.After(asOf.Add(-window)):
			// Warned, and not due yet: idle less than the timeout, or warned too recently.
		default:
			due = append(due, p)
		}
	}
	sort.Slice(rep.Warned, func(i, j int) bool { return rep.Warned[i].Slug < rep.Warned[j].Slug })
	return due
}

// EventIdleWarning is the kind of the event a project gets before the idle sweep hibernates it.
const EventIdleWarning = "idle_warning"

// sweepWork runs fn over ps with bounded concurrency. Workers pull the next project as soon as
// they are free, so one slow project holds one worker, never the rest of the sweep. Once ctx ends
// no new project is started; the ones in flight finish their steps (fn gets a context the
// sweep's own cancellation does not reach: work stopped halfway would only have to be resumed by
// the next sweep), but once stop ends their waits are cut short (WaitContext), so they hand
// their projects back instead of outlasting the grace period. record files an item under one of
// the report's lists; the projects never started are reported as deferred.
func (e *Engine) sweepWork(ctx, stop context.Context, ps []Project, concurrency int, rep *SweepReport,
	fn func(ctx context.Context, p Project, record func(list *[]SweepItem, item SweepItem))) {
	if concurrency <= 0 {
		concurrency = e.cfg.SweepConcurrency
	}
	var mu sync.Mutex
	next := 0
	take := func() (Project, bool) {
		mu.Lock()
		defer mu.Unlock()
		if next >= len(ps) || ctx.Err() != nil {
			return Project{}, false
		}
		next++
		return ps[next-1], true
	}
	record := func(list *[]SweepItem, item SweepItem) {
		mu.Lock()
		*list = append(*list, item)
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for range min(concurrency, len(ps)) {
		wg.Go(func() {
			for {
				p, ok := take()
				if !ok {
					return
				}
				fn(withStop(context.WithoutCancel(ctx), stop), p, record)
			}
		})
	}
	wg.Wait()
	for _, p := range ps[next:] {
		rep.Deferred = append(rep.Deferred, SweepItem{Slug: p.Slug, ID: p.ID, Reason: "sweep stopped before reaching it"})
	}
	for _, l := range []*[]SweepItem{&rep.Hibernated, &rep.Stopped, &rep.Skipped, &rep.Failed} {
		sort.Slice(*l, func(i, j int) bool { return (*l)[i].Slug < (*l)[j].Slug })
	}
}

// claimSkipped files a lost claim: another operation or a touch got there first, which is the
// exactly-once rule working, not a failure.
func claimSkipped(err error, item SweepItem, rep *SweepReport, record func(*[]SweepItem, SweepItem)) {
	item.Reason = err.Error()
	if errors.Is(err, ErrBusy) || errors.Is(err, ErrBadState) || errors.Is(err, ErrConflict) {
		item.Reason = "not claimed: " + err.Error()
		record(&rep.Skipped, item)
		return
	}
	record(&rep.Failed, item)
}

// hibernateMany hibernates the selected projects: those still idle since cutoff and kept alive
// by nothing at asOf when each is claimed, and again once its snapshot is taken (invariant 4).
func (e *Engine) hibernateMany(ctx, stop context.Context, ps []Project, cutoff, asOf time.Time, concurrency int, rep *SweepReport) {
	e.sweepWork(ctx, stop, ps, concurrency, rep, func(ctx context.Context, p Project, record func(*[]SweepItem, SweepItem)) {
		item := SweepItem{Slug: p.Slug, ID: p.ID}
		o, err := e.claim(ctx, p, OpHibernate, []ProjectStatus{StatusActive}, StatusHibernating, Claim{IdleBefore: cutoff, KeptAliveAt: asOf})
		if err != nil {
			claimSkipped(err, item, rep, record)
			return
		}
		_, err = e.hibernateClaimed(ctx, o, cutoff, asOf)
		switch {
		case err == nil:
			record(&rep.Hibernated, item)
		case errors.Is(err, ErrTouched):
			item.Reason = "touched after selection"
			record(&rep.Skipped, item)
		case errors.Is(err, ErrStopping):
			// Its wait was cut short and it was handed back as it was: the next run takes it.
			item.Reason = "handed back unfinished: " + err.Error()
			record(&rep.Deferred, item)
		default:
			item.Reason = err.Error()
			record(&rep.Failed, item)
		}
	})
}

// stopIdle is the first idle tier: the containers of projects idle past the stop timeout (but
// not yet past the hibernation timeout) are stopped; files stay and a start is instant.
func (e *Engine) stopIdle(ctx, stop context.Context, cutoff, asOf time.Time, skip map[string]bool, opts SweepOptions, rep *SweepReport) error {
	candidates, err := e.store.IdleProjects(ctx, cutoff, asOf, 0)
	if err != nil {
		return fmt.Errorf("sweep: select projects to stop: %w", err)
	}
	var ps []Project
	for _, p := range candidates {
		if !skip[p.ID] && e.anyRunning(ctx, p) {
			ps = append(ps, p)
		}
	}
	if opts.DryRun {
		for _, p := range ps {
			rep.Stopped = append(rep.Stopped, SweepItem{Slug: p.Slug, ID: p.ID, Reason: fmt.Sprintf("idle since %s", p.LastActivity.Format(time.RFC3339))})
		}
		return nil
	}
	e.sweepWork(ctx, stop, ps, opts.Concurrency, rep, func(ctx context.Context, p Project, record func(*[]SweepItem, SweepItem)) {
		item := SweepItem{Slug: p.Slug, ID: p.ID}
		o, err := e.claim(ctx, p, OpStop, []ProjectStatus{StatusActive}, StatusActive, Claim{IdleBefore: cutoff, KeptAliveAt: asOf})
		if err != nil {
			claimSkipped(err, item, rep, record)
			return
		}
		cs, err := e.runningContainers(ctx, p.ID)
		if err == nil {
			err = e.runtime.StopProject(ctx, p, cs)
		}
		if _, err = o.finish(ctx, Release{To: StatusActive}, OpDone, err); err != nil {
			item.Reason = fmt.Sprintf("stop containers: %v", err)
			record(&rep.Failed, item)
			return
		}
		item.Reason = "idle: containers stopped, files kept"
		record(&rep.Stopped, item)
	})
	return nil
}

// anyRunning reports whether any container of p runs (a project with nothing running has
// nothing for the first tier to stop).
func (e *Engine) anyRunning(ctx context.Context, p Project) bool {
	cs, err := e.runningContainers(ctx, p.ID)
	if err != nil {
		return false
	}
	for _, c := range cs {
		if st, err := e.runtime.ContainerStatus(ctx, p, c); err == nil && st.State == ContainerRunning {
			return true
		}
	}
	return false
}

// beginSweep takes the sweep's global lock (a dry run changes nothing and takes none). proceed
// is false when the sweep must stop: an error, or another sweep holding the lock (reported in
// rep.Lock, not an error: the CronJob's next run comes soon enough).
func (e *Engine) beginSweep(ctx context.Context, rep *SweepReport, lock string) (release func(), proceed bool, err error) {
	if rep.DryRun {
		rep.Lock = LockDryRun
		return func() {}, true, nil
	}
	if err := e.writable(rep.Sweep + " sweep"); err != nil {
		return nil, false, err
	}
	release, held, err := e.sweepLock(ctx, lock)
	if err != nil {
		return nil, false, err
	}
	if held {
		rep.Lock = LockHeld
		return nil, false, nil
	}
	rep.Lock = LockAcquired
	return release, true, nil
}

// sweepLock takes a global sweep lock. held is true when another sweep has it.
func (e *Engine) sweepLock(ctx context.Context, name string) (release func(), held bool, err error) {
	ttl := e.cfg.SweepLockTTL
	ok, err := e.store.TryLock(ctx, name, e.cfg.Owner, e.now(), ttl)
	if err != nil {
		return nil, false, fmt.Errorf("sweep: take lock %s: %w", name, err)
	}
	if !ok {
		// A sweep killed on this host must not hold the next ones off for the whole TTL while
		// its claimed projects wait: its lock is taken over at once, as its projects are.
		holder, err := e.store.LockHolder(ctx, name, e.now())
		if err != nil {
			return nil, false, fmt.Errorf("sweep: read lock %s: %w", name, err)
		}
		if holder == "" || !holderDead(holder) {
			return nil, true, nil
		}
		if ok, err = e.store.TakeOverLock(ctx, name, holder, e.cfg.Owner, e.now(), ttl); err != nil {
			return nil, false, fmt.Errorf("sweep: take over lock %s from %s: %w", name, holder, err)
		}
		if !ok {
			return nil, true, nil
		}
		e.log.Info("took over the sweep lock of a sweep that died", "lock", name, "previous_owner", holder)
	}
	// Keep the lock while the sweep runs longer than its TTL, and release it at the end, also
	// when the sweep's ctx is cancelled (SIGTERM, --deadline): a lock left to expire would cost
	// the next runs their turn.
	bg := context.WithoutCancel(ctx)
	stopRenew := periodic.Every(bg, ttl/3, func(rctx context.Context) {
		_, _ = e.store.TryLock(rctx, name, e.cfg.Owner, e.now(), ttl)
	})
	return func() {
		// stopRenew waits for a renewal in flight, so none can take the lock again after the
		// Unlock below.
		stopRenew()
		// A store that is briefly away (a database restart) should not cost the next runs
		// their turn until the lock expires: try a few times.
		var err error
		for attempt := range 4 {
			if err = e.store.Unlock(bg, name, e.cfg.Owner); err == nil {
				return
			}
			time.Sleep(time.Duration(attempt+1) * 500 * time.Millisecond)
		}
		e.log.Warn("release sweep lock; it expires by itself", "lock", name, "ttl", ttl, "err", err)
	}, false, nil
}

// SweepPurge removes the data behind every snapshot soft-deleted longer than the retention period
// ago (invariant 7), then forgets the snapshot.
func (e *Engine) SweepPurge(ctx context.Context, opts SweepOptions) (rep SweepReport, err error) {
	start := time.Now()
	asOf := opts.AsOf
	if asOf.IsZero() {
		asOf = e.now()
	}
	ctx, cancel := claimContext(ctx, opts)
	defer cancel()
	rep = newReport("purge", opts.DryRun, asOf)
	defer func() { rep.DurationMS = time.Since(start).Milliseconds() }()
	defer stoppedEarly(ctx, &rep, &err)
	release, proceed, err := e.beginSweep(ctx, &rep, lockPurge)
	if !proceed {
		return rep, err
	}
	defer release()
	expired, err := e.store.ListSnapshots(ctx, SnapshotFilter{IncludeDeleted: true, OnlyDeletedBefore: asOf.Add(-SnapshotRetention)})
	if err != nil {
		return rep, fmt.Errorf("purge: list expired snapshots: %w", err)
	}
	rep.Selected = len(expired)
	for _, s := range expired {
		if ctx.Err() != nil {
			rep.Deferred = append(rep.Deferred, SweepItem{ID: s.ID, Reason: "purge stopped before reaching it"})
			continue
		}
		item := SweepItem{ID: s.ID, Slug: s.ProjectID, Reason: fmt.Sprintf("%s snapshot deleted %s", s.Type, s.DeletedAt.Format(time.RFC3339))}
		if p, err := e.store.GetProject(ctx, s.ProjectID); err == nil {
			item.Slug = p.Slug
			if p.HibernationSnapshot == s.ID && p.Status != StatusDeleted {
				item.Reason = "still the wake point of a hibernated project"
				rep.Skipped = append(rep.Skipped, item)
				continue
			}
		}
		if opts.DryRun {
			rep.Purged = append(rep.Purged, item)
			rep.FreedBytes += s.TotalBytes()
			rep.FreedCapacityBytes += s.TotalCapacity()
			continue
		}
		if err := e.volumes.Delete(ctx, s); err != nil {
			item.Reason = fmt.Sprintf("delete data of %s: %v", s.ID, err)
			rep.Failed = append(rep.Failed, item)
			continue
		}
		if err := e.store.DeleteSnapshotRecord(ctx, s.ID); err != nil {
			item.Reason = fmt.Sprintf("forget %s: %v", s.ID, err)
			rep.Failed = append(rep.Failed, item)
			continue
		}
		rep.Purged = append(rep.Purged, item)
		rep.FreedBytes += s.TotalBytes()
		rep.FreedCapacityBytes += s.TotalCapacity()
	}
	if lc, ok := e.volumes.(LeftoverCleaner); ok && !opts.DryRun && ctx.Err() == nil {
		// A write silent for the op timeout has no operation left to finish it: its holder
		// would have been taken over by now.
		left, err := lc.RemoveLeftovers(ctx, e.now().Add(-e.cfg.OpTimeout))
		rep.Leftovers = &left
		rep.FreedBytes += left.Bytes
		if err != nil {
			rep.Failed = append(rep.Failed, SweepItem{Reason: "remove leftovers of interrupted writes: " + err.Error()})
		}
	}
	return rep, nil
}
