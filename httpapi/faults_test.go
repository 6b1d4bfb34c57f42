//go:build faults

package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

type fakeFaults map[string]string

func (f fakeFaults) SetFault(name, value string) error {
	if _, ok := f[name]; !ok {
		return errors.New("unknown fault " + name)
	}
	f[name] = value
	return nil
}

func (f fakeFaults) Faults() map[string]string { return f }

func TestFaultEndpoint(t *testing.T) {
	ff := fakeFaults{"a": "0", "b": "0"}
	inner := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("inner")) })
	srv := httptest.NewServer(WithFaults(inner, ff))
	defer srv.Close()

	res, err := http.Post(srv.URL+"/debug/faults?a=1&b=2", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]string
	json.NewDecoder(res.Body).Decode(&got)
	res.Body.Close()
	if res.StatusCode != 200 || got["a"] != "1" || got["b"] != "2" {
		t.Fatalf("POST: %s %v", res.Status, got)
	}
	res, err = http.Post(srv.URL+"/debug/faults?zzz=1", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 400 || !strings.Contains(string(body), "unknown fault zzz") {
		t.Fatalf("unknown fault: %s %q", res.Status, body)
	}
	res, err = http.Get(srv.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if string(body) != "inner" {
		t.Fatalf("other paths reach the wrapped handler: got %q", body)
	}
}
