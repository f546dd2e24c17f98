package luavm

import (
	"context"
	"sync"
	"time"
)

// A pool keeps warm states of one script, so that initialize and stateless
// requests do not wait for a state to be built and its chunk run.
//
// It has two lanes. fresh holds states that have only run the chunk; one
// goroutine keeps it full. A session takes a fresh state and owns it for
// life: it is closed afterwards, never returned. spare holds states given back
// by short borrowers (stateless requests, snapshots, auth checks, Describe)
// whose work ended cleanly; they are warm but not pristine, so only other short
// borrowers take them.
type pool struct {
	s     *Version
	fresh chan *vm
	spare chan *vm
	want  chan struct{} // wakes the filler after a fresh state was taken
	stop  chan struct{}
	done  chan struct{}
	ctx   context.Context // cancelled by close: bounds the filler's builds
	quit  context.CancelFunc

	mu     sync.Mutex
	closed bool
}

// minSpares is the least number of spare states a pool keeps. Stateless
// requests borrow one each: the spare lane must hold as many as run at once,
// or a burst closes the states it gave back and builds new ones (a build
// costs ten calls). Spares exist only after that many requests ran at once.
// A pool of size 0 (pooling disabled) keeps none.
const minSpares = 64

// closeGrace is how long close waits for a build in progress to stop.
const closeGrace = time.Second

func newPool(s *Version, size int) *pool {
	ctx, quit := context.WithCancel(context.Background())
	spares := 0
	if size > 0 {
		spares = max(size, minSpares)
	}
	return &pool{
		s:     s,
		fresh: make(chan *vm, size),
		spare: make(chan *vm, spares),
		want:  make(chan struct{}, 1),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
		ctx:   ctx,
		quit:  quit,
	}
}

// start launches the filler, after seeding the pool with v (may be nil).
func (p *pool) start(v *vm) {
	if v != nil {
		p.put(p.fresh, v)
	}
	go p.fill()
}

// fill builds fresh states until the lane is full, then waits for a taker.
// A failing build (a chunk that fails now but loaded before) is logged and
// retried with backoff.
func (p *pool) fill() {
	defer close(p.done)
	backoff := 50 * time.Millisecond
	for {
		for len(p.fresh) < cap(p.fresh) {
			v, err := p.s.newVM(p.ctx)
			if err != nil {
				if p.ctx.Err() != nil {
					return
				}
				p.s.logger.Error("building a warm Lua state failed", "error", err)
				select {
				case <-p.stop:
					return
				case <-time.After(backoff):
				}
				backoff = min(2*backoff, 5*time.Second)
				continue
			}
			backoff = 50 * time.Millisecond
			// Only this goroutine sends to fresh, so there is room.
			if !p.put(p.fresh, v) {
				return
			}
		}
		select {
		case <-p.want:
		case <-p.stop:
			return
		}
	}
}

// put adds v to lane, or closes it when the pool is closed or the lane full.
func (p *pool) put(lane chan *vm, v *vm) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		v.close()
		return false
	}
	select {
	case lane <- v:
	default:
		v.close()
	}
	return true
}

// get returns a fresh state: a warm one, or one built now.
func (p *pool) get(ctx context.Context) (*vm, error) {
	select {
	case v := <-p.fresh:
		p.wake()
		return v, nil
	default:
	}
	p.wake()
	return p.s.newVM(ctx)
}

// getSpare returns a state for a short borrower: a spare one if any, else a
// fresh one, whose globals are recorded first (isolate.go).
func (p *pool) getSpare(ctx context.Context) (*vm, error) {
	select {
	case v := <-p.spare:
		return v, nil
	default:
	}
	v, err := p.get(ctx)
	if err == nil {
		v.globals = v.snapshotGlobals()
	}
	return v, err
}

// release takes back a borrowed state: kept as a spare, with its globals
// put back as its snapshot has them, if its work ended cleanly; closed
// otherwise.
func (p *pool) release(v *vm) {
	if v.broken || v.closed || !v.isolate() {
		v.close()
		return
	}
	p.put(p.spare, v)
}

func (p *pool) wake() {
	select {
	case p.want <- struct{}{}:
	default:
	}
}

// close stops the filler and closes every pooled state. States lent out are
// closed when they come back.
func (p *pool) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.mu.Unlock()
	close(p.stop)
	p.quit()
	// A build is interrupted by quit; one whose Lua does not stop in time
	// is abandoned: put closes what it builds.
	select {
	case <-p.done:
	case <-time.After(closeGrace):
		p.s.logger.Warn("a Lua state being built did not stop: abandoned")
	}
	for _, lane := range []chan *vm{p.fresh, p.spare} {
		for {
			select {
			case v := <-lane:
				v.close()
				continue
			default:
			}
			break
		}
	}
	p.s.lib.Close()
}
