package e2b

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/sandboxd/sandboxd/internal/state"
)

// E2B's snapshots are sandboxd's, named with the key's prefix: a key
// sees, starts sandboxes from and removes its own alone, by the name it
// gave (or the one made up for it) or the whole name, its snapshotID.

// snapshotInfo is a snapshot as E2B's API describes it.
type snapshotInfo struct {
	SnapshotID string   `json:"snapshotID"`
	Names      []string `json:"names"`
}

// snapshotPrefix begins the names of the key's snapshots.
func (c *controller) snapshotPrefix() string { return "e2b-" + c.key + "-" }

// info is sn as E2B's API describes it.
func (c *controller) snapshotInfo(sn state.Snapshot) snapshotInfo {
	return snapshotInfo{SnapshotID: sn.Name, Names: []string{strings.TrimPrefix(sn.Name, c.snapshotPrefix())}}
}

// ownSnapshot is the key's snapshot ref names (its name or its whole
// name), or nil.
func (c *controller) ownSnapshot(ref string) *state.Snapshot {
	prefix := c.snapshotPrefix()
	for _, name := range []string{prefix + ref, ref} {
		if sn, err := c.s.d.Snapshots.Get(name); err == nil && sn.Name == name && strings.HasPrefix(name, prefix) {
			return sn
		}
	}
	return nil
}

// createSnapshot saves the sandbox's files (POST /sandboxes/{id}/snapshots,
// {"name"?}), as sandboxd's snapshots do: the workspace, not processes
// or memory.
func (c *controller) createSnapshot(w http.ResponseWriter, r *http.Request, sb *sandbox) {
	var req struct {
		Name string `json:"name"`
	}
	if err := decodeBody(r, &req); err != nil {
		writeError(w, http.StatusBadRequest, "malformed JSON: "+err.Error())
		return
	}
	if req.Name == "" {
		req.Name = randomToken()[:12]
	}
	var sn *state.Snapshot
	aerr := c.s.keepPaused(r.Context(), sb, func() (aerr error) {
		sn, aerr = c.s.d.Sessions.Snapshot(r.Context(), sb.rec.ID, c.snapshotPrefix()+req.Name)
		return aerr
	})
	if aerr != nil {
		writeAPIError(w, aerr)
		return
	}
	c.s.log.Info("snapshot taken", "sandbox", sb.rec.ID, "snapshot", sn.Name, "key", c.key)
	writeJSON(w, http.StatusCreated, c.snapshotInfo(*sn))
}

// listSnapshots lists the key's snapshots (GET /snapshots, with
// sandboxID, name, limit and nextToken), oldest first.
func (c *controller) listSnapshots(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := maxListLimit
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxListLimit {
			writeError(w, http.StatusBadRequest, "limit is a number from 1 to "+strconv.Itoa(maxListLimit))
			return
		}
		limit = n
	}
	all, aerr := c.s.d.Snapshots.List()
	if aerr != nil {
		writeAPIError(w, aerr)
		return
	}
	all = slices.DeleteFunc(all, func(sn state.Snapshot) bool {
		info := c.snapshotInfo(sn)
		return !strings.HasPrefix(sn.Name, c.snapshotPrefix()) ||
			q.Get("sandboxID") != "" && sn.Session != q.Get("sandboxID") ||
			q.Get("name") != "" && info.Names[0] != q.Get("name") ||
			q.Get("nextToken") != "" && sn.Name < q.Get("nextToken")
	})
	slices.SortFunc(all, func(a, b state.Snapshot) int { return strings.Compare(a.Name, b.Name) })
	out := []snapshotInfo{}
	for _, sn := range all {
		if len(out) == limit {
			w.Header().Set("X-Next-Token", sn.Name)
			break
		}
		out = append(out, c.snapshotInfo(sn))
	}
	writeJSON(w, http.StatusOK, out)
}

// deleteTemplate removes a snapshot of the key's (DELETE
// /templates/{id}, as the SDK's deleteSnapshot calls it); templates are
// sandboxd.hcl's, and not removed here.
func (c *controller) deleteTemplate(w http.ResponseWriter, r *http.Request) {
	sn := c.ownSnapshot(r.PathValue("id"))
	if sn == nil {
		writeError(w, http.StatusNotFound, "snapshot "+r.PathValue("id")+" not found")
		return
	}
	if err := c.s.d.Snapshots.Delete(sn.ID); err != nil {
		writeAPIError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
