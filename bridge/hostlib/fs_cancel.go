package hostlib

import (
	"context"
	"io"
	"os"
)

// fs calls honour the call's context as the other modules do (host-api.md:
// a cancelled or timed-out call returns within 100 ms). Reads and writes go
// a chunk at a time, the context checked between chunks; fsync, which no
// signal interrupts, runs aside and is waited for only while the call lives.
// A write cancelled meanwhile leaves the file as it was (the temporary file
// is removed once the sync returns), so the atomicity holds.

// fsChunk is how much fs reads or writes between two checks of the context:
// a few milliseconds of a slow disk.
const fsChunk = 1 << 20

// chunkReader reads r a chunk at a time, failing with ctx's error once it is
// done.
type chunkReader struct {
	ctx context.Context
	r   io.Reader
}

func (c chunkReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p[:min(len(p), fsChunk)])
}

// writeContext writes data to f a chunk at a time, checking ctx between
// chunks.
func writeContext(ctx context.Context, f *os.File, data string) error {
	for len(data) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := f.WriteString(data[:min(len(data), fsChunk)])
		if err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

// syncFile flushes f to the disk; tests replace it to stand for a slow one.
var syncFile = (*os.File).Sync

// syncContext syncs f, returning when the sync does or ctx is done,
// whichever comes first. After ctx, the sync goes on aside: synced is
// closed when it has returned, so that the caller may then remove what it
// wrote (removeTemp; a file closed meanwhile is released by the runtime only
// after the sync). When the sync returned first, synced is nil: nothing
// runs aside (the goroutine's own close of finished may not have run yet,
// and removeTemp would take the sync for one still running).
func syncContext(ctx context.Context, f *os.File) (synced <-chan struct{}, err error) {
	finished := make(chan struct{})
	result := make(chan error, 1)
	go func() {
		defer close(finished)
		result <- syncFile(f)
	}()
	select {
	case err := <-result:
		return nil, err
	case <-ctx.Done():
		return finished, ctx.Err()
	}
}

// removeTemp removes the temporary file tmp of root once synced, the sync
// of it, has returned (nil: none runs): at once, or from a goroutine
// when the sync runs on past the call, reopening the root the call closes.
func removeTemp(root *os.Root, tmp string, synced <-chan struct{}) {
	if synced != nil {
		select {
		case <-synced:
		default:
			dir := root.Name()
			go func() {
				<-synced
				if r, err := os.OpenRoot(dir); err == nil {
					r.Remove(tmp)
					r.Close()
				}
			}()
			return
		}
	}
	root.Remove(tmp)
}
