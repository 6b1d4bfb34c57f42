// Package durable writes files and directory entries so that they survive a
// crash: each function returns only after the kernel reported the data on
// disk (fsync). Used by the log store's journal and entry files and by the
// snapshot store; every function blocks on the disk.
package durable

import (
	"fmt"
	"os"
)

// WriteFile creates or truncates path, writes b to it and fsyncs it. The
// file's name is durable only once its directory is synced (SyncDir).
func WriteFile(path string, b []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// SyncDir fsyncs directory dir, making the names in it (files created,
// renamed or removed) durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}
