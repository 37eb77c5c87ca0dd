package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// AllocFSCommand is `drover alloc fs`: list a directory of an
// allocation's directory, or print one of its files (Nomad's alloc fs).
type AllocFSCommand struct{ Meta }

func (c *AllocFSCommand) Synopsis() string { return "Inspects the contents of an allocation directory" }

func (c *AllocFSCommand) Help() string {
	return strings.TrimSpace(`
Usage: drover alloc fs [options] <allocation> [<path>]

  Lists the directory at path (relative to the allocation's directory, "/"
  by default) or prints the file there. The allocation's directory holds
  alloc/ (data, logs, tmp, shared by its tasks) and one directory per task
  (local, tmp); task secrets are not readable. Nothing outside the
  allocation's directory can be reached.
` + clientOptionsUsage() + `

FS Options:

  -stat
    Show the file's information instead of its contents.

  -f
    Follow the file as it grows (Ctrl-C ends).

  -tail
    Show the end of the file: -n lines (default 10) or -c bytes.

  -n=<lines>, -c=<bytes>
    With -tail: how many lines, or bytes.

  -H
    Print sizes as bytes, not human units.`)
}

func (c *AllocFSCommand) Run(args []string) int {
	fs := c.FlagSet("alloc fs", c.Help, flagSetClient)
	stat := fs.Bool("stat", false, "")
	follow := fs.Bool("f", false, "")
	tail := fs.Bool("tail", false, "")
	lines := fs.Int("n", 10, "")
	nbytes := fs.Int64("c", 0, "")
	rawSizes := fs.Bool("H", false, "")
	cl, rest, ok := c.setup(fs, args, 1, 2, "<allocation> [<path>]")
	if !ok {
		return 1
	}
	alloc, err := c.allocByPrefix(cl, rest[0])
	if err != nil {
		return c.errorf("", err)
	}
	path := "/"
	if len(rest) == 2 {
		path = rest[1]
	}
	q := &api.QueryOptions{Namespace: alloc.Namespace}
	var fi *api.AllocFileInfo
	err = onAllocNode(cl, alloc.NodeID, func(c *api.Client) (err error) {
		fi, _, err = c.AllocFS().Stat(alloc, path, q)
		return err
	})
	if err != nil {
		return c.errorf("reading file info", err)
	}
	size := func(n int64) string {
		if *rawSizes {
			return fmt.Sprint(n)
		}
		return humanSize(n)
	}
	switch {
	case *stat:
		printList(c.Stdout, "", "Mode\tSize\tModified Time\tName", 1, func(int) string {
			return fmt.Sprintf("%s\t%s\t%s\t%s", fi.FileMode, size(fi.Size), formatTime(fi.ModTime), fi.Name)
		})
		return 0
	case fi.IsDir:
		var files []*api.AllocFileInfo
		err := onAllocNode(cl, alloc.NodeID, func(c *api.Client) (err error) {
			files, _, err = c.AllocFS().List(alloc, path, q)
			return err
		})
		if err != nil {
			return c.errorf("listing directory", err)
		}
		printList(c.Stdout, "", "Mode\tSize\tModified Time\tName", len(files), func(i int) string {
			f := files[i]
			name := f.Name
			if f.IsDir {
				name += "/"
			}
			return fmt.Sprintf("%s\t%s\t%s\t%s", f.FileMode, size(f.Size), formatTime(f.ModTime), name)
		})
		return 0
	}

	offset, origin := int64(0), "start"
	if *tail {
		origin = "end"
		switch {
		case *nbytes > 0:
			offset = *nbytes
		default:
			// Lines: read a generous end of the file, keep its last lines.
			offset = min(int64(*lines)*tailBytesPerLine, fi.Size)
			r, err := cl.AllocFS().ReadAt(alloc, path, fi.Size-offset, 0, q)
			if err != nil {
				return c.errorf("reading file", err)
			}
			b, err := io.ReadAll(r)
			r.Close()
			if err != nil {
				return c.errorf("reading file", err)
			}
			if _, err := c.Stdout.Write(lastLines(b, *lines)); err != nil {
				return 1
			}
			if !*follow {
				return 0
			}
			offset = 0
		}
	}
	if !*follow {
		var r io.ReadCloser
		if origin == "end" {
			r, err = cl.AllocFS().ReadAt(alloc, path, max(fi.Size-offset, 0), 0, q)
		} else {
			r, err = cl.AllocFS().Cat(alloc, path, q)
		}
		if err != nil {
			return c.errorf("reading file", err)
		}
		defer r.Close()
		if _, err := io.Copy(c.Stdout, r); err != nil {
			return c.errorf("reading file", err)
		}
		return 0
	}
	cancel := make(chan struct{})
	sigCh := make(chan os.Signal, 1)
	signal.Notify(sigCh, os.Interrupt)
	defer signal.Stop(sigCh)
	go func() {
		if _, ok := <-sigCh; ok {
			close(cancel)
		}
	}()
	frames, errCh := cl.AllocFS().Stream(alloc, path, origin, offset, cancel, q)
	for {
		select {
		case f, ok := <-frames:
			if !ok {
				return 0
			}
			if f.FileEvent != "" {
				fmt.Fprintf(c.Stderr, "\n%s: %s\n", path, f.FileEvent)
				if f.FileEvent == "file deleted" {
					return 0
				}
			}
			if _, err := c.Stdout.Write(f.Data); err != nil {
				return 1
			}
		case err := <-errCh:
			if err != nil && err != io.EOF {
				return c.errorf("following file", err)
			}
			return 0
		case <-cancel:
			return 0
		}
	}
}

// humanSize is n bytes in binary units, as Nomad's CLI prints sizes.
func humanSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
