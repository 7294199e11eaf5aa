package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
	cmd.AddCommand(list, approve)
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

func isChatChannel(ch string) bool { return ch == "telegram" || ch == "slack" || ch == "discord" }
