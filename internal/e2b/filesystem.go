package e2b

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sandboxd/sandboxd/api"
	"github.com/sandboxd/sandboxd/internal/e2b/envd"
	"github.com/sandboxd/sandboxd/internal/e2b/envd/envdconnect"
	"github.com/sandboxd/sandboxd/internal/errdefs"
	"github.com/sandboxd/sandboxd/internal/wire"
)

// envdHandler serves a sandbox's agent: the process and filesystem
// services, and its plain HTTP endpoints (health, environment, files).
func (s *Server) envdHandler() http.Handler {
	mux := http.NewServeMux()
	// A message is read up to maxEnvdMessage, inflated size included: a
	// holder of one sandbox's token makes sandboxd read no more.
	bounded := connect.WithReadMaxBytes(maxEnvdMessage)
	mux.Handle(envdconnect.NewProcessHandler(processService{s}, bounded))
	mux.Handle(envdconnect.NewFilesystemHandler(filesystemService{s}, bounded))
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("GET /envs", func(w http.ResponseWriter, r *http.Request) {
		sess, aerr := s.d.Sessions.Get(sandboxOf(r.Context()).rec.ID)
		if aerr != nil {
			writeAPIError(w, aerr)
			return
		}
		writeJSON(w, http.StatusOK, sess.Env)
	})
	mux.HandleFunc("GET /files", s.download)
	mux.HandleFunc("POST /files", s.upload)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, r.Method+" "+r.URL.Path+" is not part of the sandbox agent's API served here")
	})
	return mux
}

type filesystemService struct{ s *Server }

// metadataHeader begins the headers of an upload that carry the file's
// metadata, a key each (X-Metadata-Author: me).
const metadataHeader = "X-Metadata-"

// metadataOf is an upload's metadata, as envd reads it: each
// X-Metadata-KEY header's first value, the key lower-cased (the put
// checks it).
func metadataOf(h http.Header) map[string]string {
	var m map[string]string
	for name, values := range h {
		if key, ok := strings.CutPrefix(name, metadataHeader); ok && len(values) > 0 {
			if m == nil {
				m = map[string]string{}
			}
			m[strings.ToLower(key)] = values[0]
		}
	}
	return m
}

// entryInfo describes a workspace entry as envd does, under the root the
// client named.
func entryInfo(root string, e api.FileEntry) *envd.EntryInfo {
	perm, _ := strconv.ParseUint(e.Mode, 8, 32)
	mode := fs.FileMode(perm)
	info := &envd.EntryInfo{
		Name: path.Base(e.Path), Path: clientPath(root, e.Path), Size: e.Size, Mode: uint32(mode),
		Owner: "user", Group: "user", ModifiedTime: timestamppb.New(e.ModTime),
	}
	switch e.Type {
	case "file":
		info.Type = envd.FileType_FILE_TYPE_FILE
	case "dir":
		info.Type, mode = envd.FileType_FILE_TYPE_DIRECTORY, mode|fs.ModeDir
	case "symlink":
		// envd gives the target as an absolute path, as the client names
		// its home.
		info.Type, mode = envd.FileType_FILE_TYPE_SYMLINK, mode|fs.ModeSymlink
		target := e.Target
		if rel, ok := strings.CutPrefix(target, "/workspace"); ok && (rel == "" || rel[0] == '/') {
			target = clientPath(root, strings.TrimPrefix(rel, "/"))
		} else if !path.IsAbs(target) {
			target = clientPath(root, path.Join(path.Dir(e.Path), target))
		}
		info.SymlinkTarget = &target
	}
	info.Permissions = mode.String()
	info.Metadata = e.Metadata
	return info
}

// resolve is a client's path in the workspace, and the root it named.
func resolve(p string) (rel, root string, err error) {
	rel, aerr := workspacePath(p)
	if aerr != nil {
		return "", "", connectError(aerr)
	}
	return rel, rootOf(p), nil
}

func (f filesystemService) Stat(ctx context.Context, req *connect.Request[envd.StatRequest]) (*connect.Response[envd.StatResponse], error) {
	rel, root, err := resolve(req.Msg.GetPath())
	if err != nil {
		return nil, err
	}
	e, aerr := f.s.d.Sessions.Stat(ctx, sandboxOf(ctx).rec.ID, rel)
	if aerr != nil {
		return nil, connectError(aerr)
	}
	return connect.NewResponse(&envd.StatResponse{Entry: entryInfo(root, wire.FileEntry(*e))}), nil
}

func (f filesystemService) MakeDir(ctx context.Context, req *connect.Request[envd.MakeDirRequest]) (*connect.Response[envd.MakeDirResponse], error) {
	rel, root, err := resolve(req.Msg.GetPath())
	if err != nil {
		return nil, err
	}
	id := sandboxOf(ctx).rec.ID
	if _, aerr := f.s.d.Sessions.Stat(ctx, id, rel); aerr == nil {
		return nil, connect.NewError(connect.CodeAlreadyExists, fmt.Errorf("%s exists already", req.Msg.GetPath()))
	}
	e, aerr := f.s.d.Sessions.MakeDir(ctx, id, rel)
	if aerr != nil {
		return nil, connectError(aerr)
	}
	return connect.NewResponse(&envd.MakeDirResponse{Entry: entryInfo(root, wire.FileEntry(*e))}), nil
}

func (f filesystemService) Move(ctx context.Context, req *connect.Request[envd.MoveRequest]) (*connect.Response[envd.MoveResponse], error) {
	src, _, err := resolve(req.Msg.GetSource())
	if err != nil {
		return nil, err
	}
	dst, root, err := resolve(req.Msg.GetDestination())
	if err != nil {
		return nil, err
	}
	e, aerr := f.s.d.Sessions.Move(ctx, sandboxOf(ctx).rec.ID, src, dst)
	if aerr != nil {
		return nil, connectError(aerr)
	}
	return connect.NewResponse(&envd.MoveResponse{Entry: entryInfo(root, wire.FileEntry(*e))}), nil
}

// ListDir lists a directory to the depth asked (1: its entries).
func (f filesystemService) ListDir(ctx context.Context, req *connect.Request[envd.ListDirRequest]) (*connect.Response[envd.ListDirResponse], error) {
	rel, root, err := resolve(req.Msg.GetPath())
	if err != nil {
		return nil, err
	}
	depth := max(int(req.Msg.GetDepth()), 1)
	id := sandboxOf(ctx).rec.ID
	if e, aerr := f.s.d.Sessions.Stat(ctx, id, rel); aerr != nil {
		return nil, connectError(aerr)
	} else if e.Type != "dir" {
		return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("%s is not a directory", req.Msg.GetPath()))
	}
	listed, entries, aerr := f.s.d.Sessions.ListFiles(ctx, id, rel, depth > 1)
	if aerr != nil {
		return nil, connectError(aerr)
	}
	base := strings.Count(listed, "/") + 1
	if listed == "." {
		base = 0
	}
	out := &envd.ListDirResponse{}
	for _, e := range entries {
		if strings.Count(e.Path, "/")+1-base <= depth {
			out.Entries = append(out.Entries, entryInfo(root, wire.FileEntry(e)))
		}
	}
	return connect.NewResponse(out), nil
}

func (f filesystemService) Remove(ctx context.Context, req *connect.Request[envd.RemoveRequest]) (*connect.Response[envd.RemoveResponse], error) {
	rel, _, err := resolve(req.Msg.GetPath())
	if err != nil {
		return nil, err
	}
	// envd removes as `rm -rf` does: what is not there is removed.
	if aerr := f.s.d.Sessions.DeleteFile(ctx, sandboxOf(ctx).rec.ID, rel); aerr != nil && !errdefs.Is(aerr, errdefs.NotFound) {
		return nil, connectError(aerr)
	}
	return connect.NewResponse(&envd.RemoveResponse{}), nil
}

// download serves GET /files: one regular file's bytes.
func (s *Server) download(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Query().Get("path")
	rel, aerr := workspacePath(p)
	if aerr != nil {
		writeAPIError(w, aerr)
		return
	}
	id := sandboxOf(r.Context()).rec.ID
	e, aerr := s.d.Sessions.Stat(r.Context(), id, rel)
	switch {
	case aerr != nil:
		writeAPIError(w, aerr)
		return
	case e.Type == "dir":
		writeError(w, http.StatusBadRequest, p+" is a directory: list it, or read its files one by one")
		return
	}
	started := false
	aerr = s.d.Sessions.Download(r.Context(), id, rel, func(bool, string) io.Writer {
		started = true
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(p)}))
		return w
	})
	switch {
	case aerr != nil && !started:
		writeAPIError(w, aerr)
	case aerr != nil:
		panic(http.ErrAbortHandler) // a truncated transfer, not a short file
	case !started:
		w.WriteHeader(http.StatusOK)
	}
}

// writeInfo is one file an upload wrote.
type writeInfo struct {
	Name     string            `json:"name"`
	Type     string            `json:"type"`
	Path     string            `json:"path"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// upload serves POST /files: a multipart form of files whose names are
// their paths, or one file's bytes (application/octet-stream) for the
// path the query names; gzip-encoded or not. Each goes through the
// policies as a session upload does.
func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	id := sandboxOf(r.Context()).rec.ID
	body := r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(r.Body)
		if err != nil {
			writeError(w, http.StatusBadRequest, "the body is not gzip: "+err.Error())
			return
		}
		body = gz
	}
	metadata := metadataOf(r.Header)
	var out []writeInfo
	put := func(p string, data io.Reader) error {
		rel, aerr := workspacePath(p)
		if aerr != nil {
			return aerr
		}
		if _, aerr := s.d.PutFile(r.Context(), id, rel, 0, metadata, data); aerr != nil {
			return aerr
		}
		out = append(out, writeInfo{Name: path.Base(rel), Type: "file", Path: clientPath(rootOf(p), rel), Metadata: metadata})
		return nil
	}
	media, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if media != "multipart/form-data" {
		if aerr := put(r.URL.Query().Get("path"), body); aerr != nil {
			writeAPIError(w, aerr)
			return
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	r.Body = io.NopCloser(body)
	mr, err := r.MultipartReader()
	if err != nil {
		writeError(w, http.StatusBadRequest, "a multipart form is expected: "+err.Error())
		return
	}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			writeError(w, http.StatusBadRequest, "reading the form: "+err.Error())
			return
		}
		if part.FormName() != "file" {
			continue
		}
		// The file's name is its path: Part.FileName would keep the base.
		_, params, _ := mime.ParseMediaType(part.Header.Get("Content-Disposition"))
		p := params["filename"]
		if q := r.URL.Query().Get("path"); q != "" {
			p = q
		}
		if aerr := put(p, part); aerr != nil {
			writeAPIError(w, aerr)
			return
		}
	}
	if len(out) == 0 {
		writeError(w, http.StatusBadRequest, "no file in the form: send each as a part named file")
		return
	}
	writeJSON(w, http.StatusOK, out)
}
