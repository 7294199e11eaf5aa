package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"talon/internal/channel"
	"talon/internal/config"
	"talon/internal/gateway"
	"talon/internal/store"
	"talon/internal/tenantid"
)

// pairingFlags say whose pairing store a command works on.
type pairingFlags struct {
	stateDir, configPath, tenant, account string
}

func newPairingCmd() *cobra.Command {
	var f pairingFlags
	cmd := &cobra.Command{
		Use:   "pairing",
		Short: "List and approve the DM pairing requests of chat channels",
		Long: `A sender a channel's dmPolicy "pairing" does not know gets a code instead of an answer.
pairing list shows the requests waiting (their codes and expiry); pairing approve lets the
sender talk to the bot from their next message on. Both work on the state directory's
database directly, also while the gateway runs: no restart is needed. --tenant works on a
tenant's channels (<state-dir>/tenants/<id>).`,
	}
	fl := cmd.PersistentFlags()
	fl.StringVar(&f.stateDir, "state-dir", "", "state directory (default ~/.talon)")
	fl.StringVar(&f.configPath, "config", "", "config file (default: the state directory's)")
	fl.StringVar(&f.tenant, "tenant", "", "tenant id (default: the operator's own channels)")
	fl.StringVar(&f.account, "account", "", "channel account id (default: any)")

	var asJSON bool
	list := &cobra.Command{
		Use:   "list [CHANNEL]",
		Short: "List the pending pairing requests, oldest first",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ch := ""
			if len(args) == 1 {
				ch = strings.ToLower(strings.TrimSpace(args[0]))
			}
			db, _, err := f.open(cmd, ch, false)
			if err != nil {
				return err
			}
			defer db.Close()
			rs, err := db.PairingRequests(cmd.Context(), ch, f.accountID(), time.Now(), channel.PairingTTL)
			if err != nil {
				return fmt.Errorf("pairing list: %w", err)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				type row struct {
					Channel    string          `json:"channel"`
					AccountID  string          `json:"accountId"`
					SenderID   string          `json:"senderId"`
					Code       string          `json:"code"`
					CreatedAt  int64           `json:"createdAt"`
					LastSeenAt int64           `json:"lastSeenAt"`
					ExpiresAt  int64           `json:"expiresAt"`
					Meta       json.RawMessage `json:"meta,omitempty"`
				}
				rows := []row{}
				for _, r := range rs {
					rows = append(rows, row{r.Channel, r.AccountID, r.SenderID, r.Code, r.CreatedAt.UnixMilli(), r.LastSeenAt.UnixMilli(), r.CreatedAt.Add(channel.PairingTTL).UnixMilli(), r.Meta})
				}
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(map[string]any{"requests": rows})
			}
			if len(rs) == 0 {
				fmt.Fprintln(out, "No pairing request is waiting.")
				return nil
			}
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "CHANNEL\tACCOUNT\tSENDER\tCODE\tEXPIRES")
			for _, r := range rs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Channel, r.AccountID, r.SenderID, r.Code, r.CreatedAt.Add(channel.PairingTTL).UTC().Format("2006-01-02 15:04 UTC"))
			}
			tw.Flush()
			fmt.Fprintln(out, "\nApprove one with: talon pairing approve <CHANNEL> <CODE>")
			return nil
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print the requests as JSON")

	approve := &cobra.Command{
		Use:   "approve [CHANNEL] CODE",
		Short: "Let the sender of a pairing code DM the bot (CHANNEL may be left out when one channel is configured)",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ch, code := "", args[len(args)-1]
			if len(args) == 2 {
				ch = strings.ToLower(strings.TrimSpace(args[0]))
			}
			db, ch, err := f.open(cmd, ch, true)
			if err != nil {
				return err
			}
			defer db.Close()
			cfgPath, err := f.configFile()
			if err != nil {
				return err
			}
			r, err := db.ApprovePairing(cmd.Context(), store.PairingMatch{Channel: ch, AccountID: f.accountID(), Code: channel.NormalizeCode(code)}, time.Now(), channel.PairingTTL)
			if errors.Is(err, store.ErrPairingNotFound) {
				return exitError{1, fmt.Sprintf("pairing approve: no pending %s request has code %s (it may have expired after an hour, or been approved); talon pairing list shows the waiting ones", ch, channel.NormalizeCode(code))}
			}
			if err != nil {
				return fmt.Errorf("pairing approve: %w", err)
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "Approved %s sender %s on account %s: their next message gets an answer.\n", r.Channel, r.SenderID, r.AccountID)
			switch boot, err := bootstrapOwner(cfgPath, r.Channel, r.SenderID); {
			case err != nil:
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: commands.ownerAllowFrom is empty but was not written: %v\n", err)
			case boot == channel.OwnerConfigured:
				fmt.Fprintf(out, "commands.ownerAllowFrom was empty: %s:%s is now the command owner (in %s).\n", r.Channel, r.SenderID, cfgPath)
			}
			return nil
		},
	}
	var dryRun bool
	imp := &cobra.Command{
		Use:   "import [DIR]",
		Short: "Import OpenClaw's pairing files from DIR (default ~/.openclaw/credentials), leaving them as they are",
		Long: `OpenClaw kept DM pairing in DIR as <channel>-pairing.json (pending requests) and
<channel>[-<account>]-allowFrom.json (approved senders; without an account, the channel's
default account in the config). pairing import adds what they hold for telegram, slack and
discord to the state directory's database and prints one line per file. The files are not
changed (OpenClaw may still run on them), and importing again adds nothing new. Expired
requests, and requests whose code or sender is already pending, are skipped.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return f.importLegacy(cmd, args, dryRun) },
	}
	imp.Flags().BoolVar(&dryRun, "dry-run", false, "report what would be imported and write nothing")
	cmd.AddCommand(list, approve, imp)
	return cmd
}

// accountID is --account normalised, "" for any.
func (f pairingFlags) accountID() string {
	if strings.TrimSpace(f.account) == "" {
		return ""
	}
	return config.NormalizeAccountID(f.account)
}

// open checks the flags and channel and opens the database of the
// tenant whose channels they name. With need, a channel left out is the
// one pairing channel the config has.
func (f pairingFlags) open(cmd *cobra.Command, ch string, need bool) (*store.DB, string, error) {
	if cmd.Flags().Changed("account") && strings.TrimSpace(f.account) == "" {
		return nil, "", errors.New("--account must not be blank")
	}
	if ch != "" && !isChatChannel(ch) {
		return nil, "", fmt.Errorf("%q is not a channel Talon runs: telegram, slack or discord", ch)
	}
	state, err := resolveStateDir(f.stateDir)
	if err != nil {
		return nil, "", err
	}
	dir := state
	if f.tenant != "" {
		if !tenantid.Valid(f.tenant) {
			return nil, "", fmt.Errorf("--tenant %q is not a tenant id", f.tenant)
		}
		dir = filepath.Join(state, "tenants", f.tenant)
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return nil, "", fmt.Errorf("no tenant %q under %s", f.tenant, state)
		}
	}
	if ch == "" && need {
		cfgPath := configIn(dir, f.configPath)
		file, err := config.Load(cfgPath)
		if err != nil {
			return nil, "", fmt.Errorf("reading %s to find the channel: %w", cfgPath, err)
		}
		var pairing []string
		for _, id := range []string{"telegram", "slack", "discord"} {
			for _, a := range channel.Accounts(file.Config, id) {
				if a.DMPolicy == "pairing" {
					pairing = append(pairing, id)
					break
				}
			}
		}
		if len(pairing) != 1 {
			return nil, "", fmt.Errorf("name the channel: %s has %d channels whose DMs use pairing (%s)", cfgPath, len(pairing), strings.Join(pairing, ", "))
		}
		ch = pairing[0]
	}
	path := filepath.Join(dir, gateway.StoreFile)
	if _, err := os.Stat(path); err != nil {
		return nil, "", fmt.Errorf("no channel database at %s (has a gateway run on this state directory?): %w", path, err)
	}
	db, err := store.Open(path)
	if err != nil {
		return nil, "", fmt.Errorf("opening the channels' database: %w", err)
	}
	return db, ch, nil
}

// configFile is the config file of the state directory (or tenant)
// the flags name.
func (f pairingFlags) configFile() (string, error) {
	state, err := resolveStateDir(f.stateDir)
	if err != nil {
		return "", err
	}
	dir := state
	if f.tenant != "" {
		dir = filepath.Join(state, "tenants", f.tenant)
	}
	return configIn(dir, f.configPath), nil
}

// bootstrapOwner is R7.5's first-owner bootstrap of a CLI approval: the
// first sender approved where no command owner is configured becomes the
// owner, written into the config file (which the gateway reloads).
func bootstrapOwner(path, ch, sender string) (string, error) {
	f, err := config.Load(path)
	if err != nil {
		return channel.OwnerUnavailable, err
	}
	next := f.Tree.Clone()
	boot := channel.BootstrapOwner(next, f.Config, ch, sender)
	if boot != channel.OwnerConfigured {
		return boot, nil
	}
	if _, err := config.Parse(path, next.Indented()); err != nil {
		return channel.OwnerUnavailable, err
	}
	if _, err := config.Save(path, next); err != nil {
		return channel.OwnerUnavailable, err
	}
	return boot, nil
}

// maxLegacyFile bounds a legacy pairing file: OpenClaw's hold a few
// requests and a list of ids.
const maxLegacyFile = 1 << 20

// legacyRead is one legacy pairing file, read and parsed.
type legacyRead struct {
	file    channel.LegacyFile
	err     error // reading or parsing it failed
	pairing channel.LegacyPairing
	allow   channel.LegacyAllow
	// reqs and allows are the file's spans in the import.
	reqs, allows [2]int
}

// importLegacy is pairing import: read the legacy files of a directory,
// store what they hold in one transaction, report per file.
func (f pairingFlags) importLegacy(cmd *cobra.Command, args []string, dryRun bool) error {
	if cmd.Flags().Changed("account") {
		return errors.New("pairing import: --account does not apply: the files name their accounts")
	}
	dir := ""
	if len(args) == 1 {
		dir = args[0]
	} else {
		home, err := os.UserHomeDir()
		if err != nil {
			return fmt.Errorf("pairing import: finding ~/.openclaw/credentials: %w (name the directory)", err)
		}
		dir = filepath.Join(home, ".openclaw", "credentials")
	}
	db, _, err := f.open(cmd, "", false)
	if err != nil {
		return err
	}
	defer db.Close()
	cfgPath, err := f.configFile()
	if err != nil {
		return err
	}
	file, err := config.Load(cfgPath)
	if err != nil {
		return fmt.Errorf("pairing import: reading %s for the channels' default accounts: %w", cfgPath, err)
	}
	now := time.Now()
	files, err := readLegacyDir(dir, file.Config, now)
	if err != nil {
		return fmt.Errorf("pairing import: %w", err)
	}
	in, err := legacyImport(files, now)
	if err != nil {
		return fmt.Errorf("pairing import: %w", err)
	}
	in.DryRun = dryRun
	res, err := db.ImportPairing(cmd.Context(), in)
	if err != nil {
		return fmt.Errorf("pairing import: %w", err)
	}
	if failed := reportLegacy(cmd.OutOrStdout(), dir, files, in, res); failed > 0 {
		others := "the others were imported"
		if dryRun {
			others = "nothing was written (--dry-run)"
		}
		return exitError{1, fmt.Sprintf("pairing import: %s could not be read or parsed; %s", plural(failed, "file"), others)}
	}
	return nil
}

// readLegacyDir reads and parses the legacy pairing files of dir, by
// name. Files of channels Talon does not run are not read.
func readLegacyDir(dir string, cfg *config.Config, now time.Time) ([]legacyRead, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", dir, err)
	}
	defer root.Close()
	entries, err := fs.ReadDir(root.FS(), ".")
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", dir, err)
	}
	var out []legacyRead
	for _, e := range entries {
		lf, ok := channel.ParseLegacyName(e.Name(), cfg)
		if !ok {
			continue
		}
		r := legacyRead{file: lf}
		if lf.Skip == "" {
			r.pairing, r.allow, r.err = readLegacy(root, lf, now)
		}
		out = append(out, r)
	}
	return out, nil
}

// readLegacy reads and parses one legacy file.
func readLegacy(root *os.Root, lf channel.LegacyFile, now time.Time) (channel.LegacyPairing, channel.LegacyAllow, error) {
	data, err := readLegacyFile(root, lf.Name)
	if err != nil {
		return channel.LegacyPairing{}, channel.LegacyAllow{}, err
	}
	if lf.Kind == channel.LegacyRequests {
		p, err := channel.ParseLegacyPairing(lf, data, now)
		return p, channel.LegacyAllow{}, err
	}
	a, err := channel.ParseLegacyAllowFrom(lf, data)
	return channel.LegacyPairing{}, a, err
}

// readLegacyFile reads a regular file of root of at most maxLegacyFile
// bytes. root refuses a symlink out of the directory; O_NONBLOCK keeps a
// FIFO in its place from blocking the open.
func readLegacyFile(root *os.Root, name string) ([]byte, error) {
	fh, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("reading: %w", err)
	}
	defer fh.Close()
	fi, err := fh.Stat()
	switch {
	case err != nil:
		return nil, fmt.Errorf("reading: %w", err)
	case !fi.Mode().IsRegular():
		return nil, errors.New("reading: not a regular file")
	case fi.Size() > maxLegacyFile:
		return nil, fmt.Errorf("reading: %d bytes, more than 1 MiB", fi.Size())
	}
	data, err := io.ReadAll(io.LimitReader(fh, maxLegacyFile+1))
	if err == nil && len(data) > maxLegacyFile {
		err = errors.New("more than 1 MiB")
	}
	if err != nil {
		return nil, fmt.Errorf("reading: %w", err)
	}
	return data, nil
}

// legacyImport is the store's import of what files hold; it notes each
// file's span in it.
func legacyImport(files []legacyRead, now time.Time) (store.PairingImport, error) {
	in := store.PairingImport{Now: now, TTL: channel.PairingTTL, Cap: channel.PendingPerAccount}
	for i := range files {
		r := &files[i]
		r.reqs[0], r.allows[0] = len(in.Requests), len(in.Allow)
		for _, q := range r.pairing.Requests {
			meta, err := json.Marshal(q.Meta)
			if err != nil {
				return store.PairingImport{}, fmt.Errorf("%s %s: %w", r.file.Name, q.Entry, err)
			}
			in.Requests = append(in.Requests, store.PairingRequest{Channel: r.file.Channel, AccountID: q.AccountID,
				SenderID: q.SenderID, Code: q.Code, CreatedAt: q.CreatedAt, LastSeenAt: q.LastSeenAt, Meta: meta})
		}
		for _, id := range r.allow.SenderIDs {
			in.Allow = append(in.Allow, store.PairingAllow{Channel: r.file.Channel, AccountID: r.file.AccountID, SenderID: id})
		}
		r.reqs[1], r.allows[1] = len(in.Requests), len(in.Allow)
	}
	return in, nil
}

// reportLegacy prints a line per file, and one under it per entry
// skipped; it returns how many files failed.
func reportLegacy(w io.Writer, dir string, files []legacyRead, in store.PairingImport, res store.PairingImported) (failed int) {
	verb := "imported"
	if in.DryRun {
		verb = "would import"
	}
	if len(files) == 0 {
		fmt.Fprintf(w, "No OpenClaw pairing files (<channel>-pairing.json, <channel>[-<account>]-allowFrom.json) in %s.\n", dir)
		return 0
	}
	var reqs, allows int
	for _, r := range files {
		switch {
		case r.file.Skip != "":
			fmt.Fprintf(w, "%s: skipped: %s\n", r.file.Name, r.file.Skip)
			continue
		case r.err != nil:
			fmt.Fprintf(w, "%s: not imported: %v\n", r.file.Name, r.err)
			failed++
			continue
		}
		var notes []string
		skipped := slices.Clone(r.pairing.Skipped)
		if r.file.Kind == channel.LegacyRequests {
			n, present, expired := 0, 0, r.pairing.Expired
			for i, o := range res.Requests[r.reqs[0]:r.reqs[1]] {
				q := r.pairing.Requests[i]
				switch o {
				case store.ImportNew:
					n++
				case store.ImportPresent:
					present++
				case store.ImportExpired:
					expired++
				default:
					skipped = append(skipped, channel.LegacySkip{Index: q.Index, Entry: q.Entry, Reason: importReason(o, r.file.Channel, q)})
				}
			}
			reqs += n
			notes = append(notes, fmt.Sprintf("%s %s", verb, plural(n, "request")))
			notes = appendCount(notes, present, "already pending")
			notes = appendCount(notes, expired, "expired")
		} else {
			n := 0
			for _, isNew := range res.Allow[r.allows[0]:r.allows[1]] {
				if isNew {
					n++
				}
			}
			allows += n
			skipped = append(skipped, r.allow.Skipped...)
			notes = append(notes, fmt.Sprintf("%s %s into %s/%s", verb, plural(n, "allowed sender"), r.file.Channel, r.file.AccountID))
			notes = appendCount(notes, len(r.allow.SenderIDs)-n, "already allowed")
		}
		notes = appendCount(notes, len(skipped), "skipped")
		slices.SortStableFunc(skipped, func(a, b channel.LegacySkip) int { return a.Index - b.Index })
		fmt.Fprintf(w, "%s: %s\n", r.file.Name, strings.Join(notes, ", "))
		for _, s := range skipped {
			fmt.Fprintf(w, "  %s: skipped: %s\n", s.Entry, s.Reason)
		}
	}
	done := "The files are left as they are."
	if in.DryRun {
		done = "Nothing was written (--dry-run)."
	}
	fmt.Fprintf(w, "%s %s and %s from %s. %s\n", strings.ToUpper(verb[:1])+verb[1:], plural(reqs, "pairing request"), plural(allows, "allowed sender"), dir, done)
	return failed
}

// importReason says why the store did not take a request.
func importReason(o store.ImportOutcome, ch string, q channel.LegacyRequest) string {
	switch o {
	case store.ImportSenderPending:
		return fmt.Sprintf("sender %s already has another pending %s request on account %s", q.SenderID, ch, q.AccountID)
	case store.ImportCodeInUse:
		return fmt.Sprintf("code %s is in use by another pending %s request", q.Code, ch)
	case store.ImportCapped:
		return fmt.Sprintf("account %s of %s already has %d pending requests, the most it may have", q.AccountID, ch, channel.PendingPerAccount)
	}
	return fmt.Sprintf("not imported (outcome %d)", o)
}

func appendCount(notes []string, n int, what string) []string {
	if n == 0 {
		return notes
	}
	return append(notes, fmt.Sprintf("%d %s", n, what))
}

func isChatChannel(ch string) bool { return ch == "telegram" || ch == "slack" || ch == "discord" }
