// The S3 test server: versitygw's gateway (its S3 API, SigV4 auth, IAM store and posix
// backend) started through embedgw, the entry point versitygw keeps for embedding it.
//
// versitygw's own command also links its Azure, S3-proxy and ScoutFS backends, which the
// test services never start: 589 packages to compile on a fresh machine against 493 here,
// 60 s against 43 s on two cores, and that build is what a first `./run acceptance` waits
// on. This command serves the posix
// backend only, with the defaults versitygw's command gives every setting the tests
// leave unset, and takes the part of its command line they use:
//
//	versitygw --port HOST:PORT --iam-dir DIR posix DATA
//
// with ROOT_ACCESS_KEY_ID, ROOT_SECRET_ACCESS_KEY and VGW_REGION from the environment (not
// argv, so ps does not show the keys). SIGINT and SIGTERM stop it as they stop versitygw.
package main

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"syscall"

	"github.com/versity/versitygw/backend/meta"
	"github.com/versity/versitygw/backend/posix"
	"github.com/versity/versitygw/debuglogger"
	"github.com/versity/versitygw/embedgw"
)

// The defaults of versitygw's command (cmd/versitygw and its posix subcommand) for what is
// not on this command line.
const (
	maxConnections      = 250000
	maxRequests         = 100000
	multipartMaxParts   = 10000
	copyObjectThreshold = 5 * 1024 * 1024 * 1024
	iamCacheTTL         = 120
	iamCachePrune       = 3600
	dirPerm             = 0o755
	filePerm            = 0o644
)

// Set at build time (-X main.Version=...): the pinned versitygw version.
var Version = "unknown"

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "versitygw: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	port := flag.String("port", ":7070", "S3 API listening address")
	iamDir := flag.String("iam-dir", "", "directory of the internal IAM store")
	flag.Parse()
	if flag.NArg() != 2 || flag.Arg(0) != "posix" {
		return fmt.Errorf("usage: versitygw --port HOST:PORT --iam-dir DIR posix DATA")
	}
	root := flag.Arg(1)

	if err := (meta.XattrMeta{}).Test(root); err != nil {
		return fmt.Errorf("xattr check failed: %w", err)
	}
	opts := posix.PosixOpts{CopyObjectThreshold: copyObjectThreshold}
	opts.SetNewDirPerm(fs.FileMode(dirPerm))
	opts.SetNewFilePerm(fs.FileMode(filePerm))
	be, err := posix.New(root, meta.XattrMeta{}, opts)
	if err != nil {
		return fmt.Errorf("failed to init posix backend: %w", err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return embedgw.RunVersityGW(ctx, be, &embedgw.Config{
		RootUserAccess:      os.Getenv("ROOT_ACCESS_KEY_ID"),
		RootUserSecret:      os.Getenv("ROOT_SECRET_ACCESS_KEY"),
		Region:              os.Getenv("VGW_REGION"),
		Ports:               []string{*port},
		MaxConnections:      maxConnections,
		MaxRequests:         maxRequests,
		AdminMaxConnections: maxConnections,
		AdminMaxRequests:    maxRequests,
		MultipartMaxParts:   multipartMaxParts,
		LogLevel:            debuglogger.LevelSilent,
		IAMDir:              *iamDir,
		IAMCacheTTL:         iamCacheTTL,
		IAMCachePrune:       iamCachePrune,
		Version:             Version,
	})
}
