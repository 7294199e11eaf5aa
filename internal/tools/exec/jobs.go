package exec

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"talon/internal/contain"
	"talon/internal/sandbox"
	"talon/internal/tools"
)

// Limits bound the background jobs a Jobs table holds.
type Limits struct {
	// PerSession is how many jobs, running or finished, one session keeps.
	PerSession int
	// Total is how many jobs the table keeps, over all sessions.
	Total int
	// HeadBytes and TailBytes are the output a job keeps: its first
	// HeadBytes and its last TailBytes bytes.
	HeadBytes, TailBytes int
	// TTL is how long a finished job stays after it ended.
	TTL time.Duration
}

// DefaultLimits are the limits of the table core tools share: at most
// 1.06 MiB of output for each of 64 jobs, and finished jobs kept for
// OpenClaw's default of 30 minutes (tools.exec.cleanupMs).
func DefaultLimits() Limits {
	return Limits{PerSession: 16, Total: 64, HeadBytes: 64 << 10, TailBytes: 1 << 20, TTL: 30 * time.Minute}
}

// Jobs is the table of background jobs that exec starts and process
// manages: one per gateway process, shared by every session, each job
// owned by the session that started it. It is safe for concurrent use.
type Jobs struct {
	lim Limits
	now func() time.Time

	mu   sync.Mutex
	byID map[string]*job
}

// NewJobs returns an empty table with the given limits.
func NewJobs(lim Limits) *Jobs {
	return &Jobs{lim: lim, now: time.Now, byID: map[string]*job{}}
}

// owner is who may see a job: the session of one agent, in one
// workspace. The workspace directory tells tenants apart, whose agent ids
// and session keys may be the same.
type owner struct{ workspace, agent, session string }

func ownerOf(env *tools.Env) owner {
	o := owner{agent: env.AgentID, session: env.SessionKey}
	if env.Workspace != nil {
		o.workspace = env.Workspace.Name()
	}
	return o
}

// job is one command exec started with the process tool available. It
// enters the table when it goes to the background.
type job struct {
	id      string
	owner   owner
	command string
	started time.Time
	out     *outBuf

	proc   sandbox.Process
	cancel context.CancelFunc

	stdinMu sync.Mutex
	stdin   *os.File // write end of the command's stdin; nil once closed
	stdinR  *os.File // read end, closed when the job ends

	done  chan struct{} // closed when the fields below are set
	exit  sandbox.Exit
	err   error
	ended time.Time

	pollMu sync.Mutex
	polled int64 // output offset the last poll reached
}

// start starts cmd in env's sandbox as a job that may go to the
// background: its context outlives the call, and its stdin is a pipe.
// The job is not in the table yet (see adopt).
func (js *Jobs) start(ctx context.Context, env *tools.Env, cmd sandbox.Command, command string) (*job, error) {
	id, err := newID()
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("creating the stdin pipe: %w", err)
	}
	j := &job{
		id: id, owner: ownerOf(env), command: command, started: js.now(),
		out: newOutBuf(js.lim.HeadBytes, js.lim.TailBytes), stdin: w, stdinR: r, done: make(chan struct{}),
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = r, j.out, j.out
	// The job lives until it ends or is killed, not until the tool call
	// returns; the call's values (not its cancellation) carry over.
	jctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p, err := env.Sandbox.Start(jctx, cmd)
	if err != nil {
		cancel()
		r.Close()
		w.Close()
		return nil, err
	}
	j.proc, j.cancel = p, cancel
	go func() {
		exit, err := p.Wait()
		j.stdinMu.Lock()
		if j.stdin != nil {
			j.stdin.Close()
			j.stdin = nil
		}
		j.stdinR.Close()
		j.stdinMu.Unlock()
		j.exit, j.err, j.ended = exit, err, js.now()
		close(j.done)
		cancel()
	}()
	return j, nil
}

func newID() (string, error) {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("making a job id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// finished reports whether the job has ended.
func (j *job) finished() bool {
	select {
	case <-j.done:
		return true
	default:
		return false
	}
}

// kill ends the job and everything it started.
func (j *job) kill() {
	j.cancel()
	j.proc.Kill()
}

// adopt puts a started job in the table, first dropping the finished jobs
// past their TTL and, if the session is at its limit, its oldest finished
// job. It fails when the session or the table holds only running jobs.
func (js *Jobs) adopt(j *job) error {
	js.mu.Lock()
	defer js.mu.Unlock()
	js.prune()
	for {
		_, dup := js.byID[j.id]
		if !dup {
			break
		}
		id, err := newID()
		if err != nil {
			return err
		}
		j.id = id
	}
	own := js.ownedLocked(j.owner)
	if len(own) >= js.lim.PerSession {
		i := slices.IndexFunc(own, (*job).finished)
		if i < 0 {
			return fmt.Errorf("this session already has %d background jobs running, its limit; kill or remove one with the process tool first", len(own))
		}
		delete(js.byID, own[i].id)
	}
	if len(js.byID) >= js.lim.Total {
		return fmt.Errorf("the gateway already holds %d background jobs, its limit; remove finished ones with the process tool first", len(js.byID))
	}
	js.byID[j.id] = j
	return nil
}

// prune drops finished jobs whose TTL has passed. js.mu is held.
func (js *Jobs) prune() {
	now := js.now()
	for id, j := range js.byID {
		if j.finished() && now.Sub(j.ended) > js.lim.TTL {
			delete(js.byID, id)
		}
	}
}

// ownedLocked returns o's jobs, oldest first. js.mu is held.
func (js *Jobs) ownedLocked(o owner) []*job {
	var out []*job
	for _, j := range js.byID {
		if j.owner == o {
			out = append(out, j)
		}
	}
	slices.SortFunc(out, func(a, b *job) int {
		if c := a.started.Compare(b.started); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	return out
}

// list returns the jobs of env's session, oldest first.
func (js *Jobs) list(env *tools.Env) []*job {
	js.mu.Lock()
	defer js.mu.Unlock()
	js.prune()
	return js.ownedLocked(ownerOf(env))
}

// errNoJob is the answer for a job id that does not exist or belongs to
// another session: the two are not told apart.
var errNoJob = errors.New("no such job")

// get returns the job id of env's session.
func (js *Jobs) get(env *tools.Env, id string) (*job, error) {
	js.mu.Lock()
	defer js.mu.Unlock()
	js.prune()
	j, ok := js.byID[id]
	if !ok || j.owner != ownerOf(env) {
		return nil, fmt.Errorf("%w %q in this session; process with action \"list\" shows its jobs", errNoJob, id)
	}
	return j, nil
}

// remove drops j from the table.
func (js *Jobs) remove(j *job) {
	js.mu.Lock()
	defer js.mu.Unlock()
	if js.byID[j.id] == j {
		delete(js.byID, j.id)
	}
}

// Close kills every job still running and empties the table.
func (js *Jobs) Close() {
	js.mu.Lock()
	all := make([]*job, 0, len(js.byID))
	for _, j := range js.byID {
		all = append(all, j)
	}
	clear(js.byID)
	js.mu.Unlock()
	for _, j := range all {
		j.kill()
	}
	for _, j := range all {
		<-j.done
	}
}

// Running says a job whose workspace is dir or lies in it has not ended.
func (js *Jobs) Running(dir string) bool {
	js.mu.Lock()
	defer js.mu.Unlock()
	for _, j := range js.byID {
		if _, in := contain.Within(dir, j.owner.workspace); in && !j.finished() {
			return true
		}
	}
	return false
}

// Forget kills and drops every job whose workspace is dir or lies in it:
// a deleted tenant's, whose directory may be made again under the same
// name (tools.Forgetter).
func (js *Jobs) Forget(dir string) {
	js.mu.Lock()
	var gone []*job
	for id, j := range js.byID {
		if _, in := contain.Within(dir, j.owner.workspace); in {
			gone = append(gone, j)
			delete(js.byID, id)
		}
	}
	js.mu.Unlock()
	for _, j := range gone {
		j.kill()
	}
	for _, j := range gone {
		<-j.done
	}
}
