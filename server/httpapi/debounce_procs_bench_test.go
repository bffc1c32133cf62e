package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/internal/testkit/storetest"
	"github.com/hourglass-io/hourglass/memstore"
	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/server/httpapi"
)

// BenchmarkDebounceProcesses: the debounce of docs/keys.md on the
// embedded engine (on disk, its default fsync) with its 8 callers as 8
// processes, each putting over HTTP to one server in this process
// (storetest.BenchDebounceProcs), which reserves in process.
//
//	go test -run '^$' -bench DebounceProcesses -benchtime 1x ./server/httpapi/
func BenchmarkDebounceProcesses(b *testing.B) {
	s, err := memstore.Open(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	ts := startServer(b, s, nil)
	for range b.N {
		storetest.BenchDebounceProcs(b, s, 8, []string{httpPutterEnv + "=" + ts.url}, 20)
	}
}

// BenchmarkKeyWindowsProcesses: the key windows on the embedded engine
// (on disk, its default fsync) by 8 processes on the real clock, each
// calling one server in this process over HTTP
// (storetest.BenchKeyWindowsProcs); 10,000 keys over 5 s, windows of 500
// ms.
//
//	go test -run '^$' -bench KeyWindowsProcesses -benchtime 1x ./server/httpapi/
func BenchmarkKeyWindowsProcesses(b *testing.B) {
	s, err := memstore.Open(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	ts := startServer(b, s, nil)
	for range b.N {
		storetest.BenchKeyWindowsProcs(b, s, 8, []string{httpPutterEnv + "=" + ts.url}, 10000, 5*time.Second, 500*time.Millisecond)
	}
}

// httpWindowsClient is a caller process's HTTP client of the server
// httpPutterEnv names (storetest.RunWindowsChild): the puts as
// httpPutter's, the finish a POST /v1/jobs/{id}/finish.
func httpWindowsClient() (storetest.WindowsClient, func(), error) {
	put, closeFn, err := httpPutterWith(func(j queue.NewJob) httpapi.PutRequest {
		body := string(j.Body)
		return httpapi.PutRequest{Body: &body, UniqueKey: j.UniqueKey, TTRMS: j.TTR.Milliseconds(), UniqueForMS: j.UniqueFor.Milliseconds()}
	})
	if err != nil {
		return storetest.WindowsClient{}, nil, err
	}
	base := os.Getenv(httpPutterEnv)
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	finish := func(ctx context.Context, id queue.ID, result []byte) error {
		req, _ := json.Marshal(map[string]string{"result": string(result)})
		hr, err := http.NewRequestWithContext(ctx, "POST", fmt.Sprintf("%s/v1/jobs/%d/finish", base, id), bytes.NewReader(req))
		if err != nil {
			return err
		}
		hr.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(hr)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			return fmt.Errorf("finish %d: %s", id, resp.Status)
		}
		return nil
	}
	return storetest.WindowsClient{Put: put, Finish: finish}, func() { closeFn(); c.CloseIdleConnections() }, nil
}

// httpPutterEnv names the server a caller process of
// BenchmarkDebounceProcesses or BenchmarkKeyWindowsProcesses calls.
const httpPutterEnv = "HOURGLASS_DEBOUNCE_HTTP"

// httpPutter is a putter process's HTTP client of the server
// httpPutterEnv names (storetest.RunDebounceChild): one connection kept
// alive, opened before the burst.
func httpPutter() (storetest.DebouncePutter, func(), error) {
	return httpPutterWith(func(j queue.NewJob) httpapi.PutRequest {
		body := string(j.Body)
		return httpapi.PutRequest{Body: &body, UniqueKey: j.UniqueKey, DelayMS: j.Delay.Milliseconds(),
			TTRMS: 60000, Debounce: "both", MaxWaitMS: j.MaxWait.Milliseconds()}
	})
}

// httpPutterWith is httpPutter with the request made of a job by
// request.
func httpPutterWith(request func(queue.NewJob) httpapi.PutRequest) (storetest.DebouncePutter, func(), error) {
	base := os.Getenv(httpPutterEnv)
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	put := func(ctx context.Context, tube string, j queue.NewJob) (queue.PutResult, error) {
		req, _ := json.Marshal(request(j))
		hr, err := http.NewRequestWithContext(ctx, "POST", base+"/v1/tubes/"+tube+"/jobs", bytes.NewReader(req))
		if err != nil {
			return queue.PutResult{}, err
		}
		hr.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(hr)
		if err != nil {
			return queue.PutResult{}, err
		}
		defer resp.Body.Close()
		var reply httpapi.PutReply
		if err := json.NewDecoder(resp.Body).Decode(&reply); err != nil || resp.StatusCode/100 != 2 {
			return queue.PutResult{}, fmt.Errorf("put: %s: %v", resp.Status, err)
		}
		return queue.PutResult{ID: queue.ID(reply.ID), Duplicate: reply.Duplicate, Debounced: reply.Debounced}, nil
	}
	// The connection is open before the burst, as a running process's is.
	resp, err := c.Get(base + "/v1/tubes")
	if err != nil {
		return nil, nil, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return put, c.CloseIdleConnections, nil
}
