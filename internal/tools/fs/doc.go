// Package fs holds the file tools: read, write, edit and apply_patch. Every
// path they take is relative to the workspace, an os.Root, so neither
// "..", absolute paths nor symbolic links lead out of it; write, edit and
// apply_patch refuse to run when the workspace is read-only. Writes are
// atomic (temporary file in the same directory, fsync, rename), and
// apply_patch checks every change before writing any.
//
// The tools are stateless and safe for concurrent use. Concurrent writes
// to different files are independent; concurrent writes to one file end
// with one of them whole, never a mix.
package fs
