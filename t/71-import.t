#!/usr/bin/perl
# `svc export` and `svc import` (SPEC 5, 7): counts, skip and --overwrite, --dry-run,
# corrupted bundles, hostile tarballs, another agent's bundle, and imports killed at every
# rename (strace) or in the middle of writing: a session is there whole or not at all.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use Digest::SHA qw(sha256_hex);
use File::Path qw(make_path remove_tree);
use File::Temp qw(tempdir);
use IO::Compress::Gzip qw(gzip $GzipError);
use SvcCliTest;
use SvcTest ();

my $tmp = tempdir('svc-imp-XXXXXX', TMPDIR => 1, CLEANUP => 1);

sub files_under { SvcTest::files_under(@_) }
# The session's files (no lock files, no writer's spare: neither is exported) as
# {relative path => bytes}.
sub tree {
    my ($dir) = @_;
    my %t;
    for my $f (files_under($dir)) {
        next if $f =~ m{/\.svc\.(run\.)?lock$} || $f =~ /\.tmp-spare$/;
        # a restored session's memory state names the target's memory file (SPEC 19)
        ($t{ substr($f, length($dir) + 1) } = slurp($f)) =~ s/"memory_file": "[^"]*"/"memory_file": "*"/;
    }
    return \%t;
}
sub sessions_in {
    my ($root) = @_;
    opendir(my $dh, $root) or return ();
    return sort map { /^session_(.+)$/ ? $1 : () } readdir $dh;
}
sub same_tree {
    my ($a, $b) = @_;
    my ($ta, $tb) = (tree($a), tree($b));
    return 0 unless join("\0", sort keys %$ta) eq join("\0", sort keys %$tb);
    for (keys %$ta) { return 0 unless $ta->{$_} eq $tb->{$_} }
    return 1;
}

# ---- a source root with three sessions ----
my $src = new_home();
is svc($src, 'chat', 'one', 'hello one')->{rc}, 0, 'chat one';
is svc($src, 'chat', 'one', 'again')->{rc}, 0, 'chat one again';
is svc($src, 'chat', 'two', '/tool clock {}')->{rc}, 0, 'chat two';
is svc($src, 'chat', 'three', 'hello three')->{rc}, 0, 'chat three';
is svc($src, 'sessions', 'archive', 'three')->{rc}, 0, 'three archived';

my $r = svc($src, 'export', '--out', "$tmp/out", '--include-archived');
is $r->{rc}, 0, 'svc export: exit 0';
like $r->{out}, qr/^exported 3 sessions, 10 messages, .*, 0 warnings: \Q$tmp\E\/out\/chat-export-\S+\n\z/,
    'svc export: counts at the end, nothing else on a pipe';
unlike $r->{out}, qr/\r/, 'no progress bar when stdout is not a terminal';
my ($bundle) = $r->{out} =~ /: (\S+)\n\z/;
ok -f "$bundle/manifest.json", 'the bundle directory';

$r = svc($src, 'export', '--out', "$tmp/out", '--tar', '--session', 'one', '--session', 'two');
is $r->{rc}, 0, 'svc export --tar --session x2';
my ($tarball) = $r->{out} =~ /: (\S+\.tar\.gz)\n\z/;
ok -f $tarball, 'a .tar.gz';
like $r->{out}, qr/exported 2 sessions/, 'named sessions only';

$r = svc($src, 'export', '--out', "$tmp/out", '--session', 'missing');
is $r->{rc}, 1, 'unknown session: exit 1';
like $r->{err}, qr/session_not_found: .*missing/, 'named in the error';
$r = svc($src, 'export', '--bogus');
is $r->{rc}, 2, 'unknown option: exit 2';
$r = svc($src, 'export', '--out', "$tmp/out", '--status', 'idle', '--since', '2999-01-01T00:00:00Z');
like $r->{out}, qr/exported 0 sessions/, '--since in the future: nothing selected';
$r = svc($src, 'export', '--out', "$tmp/out", '--since', 'yesterday');
is $r->{rc}, 2, '--since yesterday: a usage error';
like $r->{err}, qr/^svc: --since must be an ISO 8601 time/, '  naming --since (not the API field)';

# A session that cannot be read (its lock file is a directory): exit 1 naming it, no
# bundle; --allow-partial exports the rest and names it on stderr.
my $lk = "$src->{root}/session_two/.svc.lock";
unlink $lk;
mkdir $lk or die "mkdir $lk: $!";
my @bundles = glob "$tmp/out/chat-export-*";
for my $args (['--include-archived'], ['--session', 'one', '--session', 'two', '--tar']) {
    $r = svc($src, 'export', '--out', "$tmp/out", @$args);
    is $r->{rc}, 1, "left out (@$args): exit 1";
    like $r->{err}, qr/^svc: io_error: export left out 1 of \d+ sessions \(two\): session lock: .*--allow-partial/m,
        "left out (@$args): the session, the cause and the option named";
    is scalar(my @now = glob "$tmp/out/chat-export-*"), scalar(@bundles), "left out (@$args): no bundle";
}
$r = svc($src, 'export', '--out', "$tmp/out", '--include-archived', '--allow-partial');
is $r->{rc}, 0, '--allow-partial: exit 0';
like $r->{out}, qr/^exported 2 sessions, /, '--allow-partial: the others exported';
like $r->{err}, qr/^svc: left out \(--allow-partial\): session two$/m, '--allow-partial: the session named';
rmdir $lk or die "rmdir $lk: $!";

# ---- a progress bar on a terminal (script(1) gives svc one) ----
SKIP: {
    skip 'script(1) not installed', 3 unless system('script -V >/dev/null 2>&1') == 0;
    local $ENV{SVC_HOME} = $src->{home};
    my $cmd = svc_bin() . " export --include-archived --out $tmp/tty";
    my $tty = `script -qec '$cmd' /dev/null`;
    like $tty, qr{\rexport: selecting: 3 sessions }, 'a terminal sees the sessions counted while selected';
    like $tty, qr{\rexport \[#+\.*\] \d+/3 sessions, [\d.]+ [KM]?B}, 'a terminal gets the progress bar';
    like $tty, qr/exported 3 sessions/, 'and the counts at the end';
}

# ---- import into an empty root ----
my $dst = new_home();
$r = svc($dst, 'import', $bundle);
is $r->{rc}, 0, 'import: exit 0';
like $r->{out}, qr/^imported 3 sessions, skipped 0, failed 0 \(bundle chat-export-\S+\)\n\z/, 'import: counts';
is_deeply [sessions_in($dst->{root})], [qw(one three two)], 'three sessions restored';
ok same_tree(native_dir($src, $_), native_dir($dst, $_)), "$_: byte-equal" for qw(one two three);
my @stale = grep { /\.svc_import-/ } map { $_ } do { opendir(my $d, $dst->{root}); readdir $d };
is scalar(@stale), 0, 'no staging left in the root';
my $one;
$r = svc($dst, 'sessions', 'list', '--all');
my $list = jdecode($r->{out});
is_deeply [sort map { $_->{session_id} } @{ $list->{sessions} }], [qw(one three two)],
    'the listing knows them at once';
$r = svc($dst, 'chat', 'one', 'continued');
($one) = grep { $_->{session_id} eq 'one' } @{ jdecode(svc($dst, 'sessions', 'list', '--all')->{out})->{sessions} };
is $one->{message_count}, 6, 'listed with 6 messages after the run';
like $r->{out}, qr/given 4 earlier messages/, 'an imported session continues';
is_deeply [msg_ids($dst, 'one')], [0 .. 5], 'ids continue';

# on a terminal: the bytes of the bundle while it is read and checked, then the sessions
SKIP: {
    skip 'script(1) not installed', 2 unless system('script -V >/dev/null 2>&1') == 0;
    my $tty_dst = new_home();
    local $ENV{SVC_HOME} = $tty_dst->{home};
    my $tty = `script -qec '@{[svc_bin()]} import $bundle' /dev/null`;
    like $tty, qr{\rimport: [\d.]+ [KM]?B }, 'a terminal sees the bundle being read';
    like $tty, qr{\rimport \[#+\.*\] \d/3 sessions}, 'then the sessions placed';
}

# ---- a second import skips; --overwrite replaces ----
$r = svc($dst, 'import', $bundle);
is $r->{rc}, 0, 'second import: exit 0';
like $r->{out}, qr/imported 0 sessions, skipped 3, failed 0/, 'second import: all skipped';
like $r->{err}, qr/skipped one: exists/, 'the reason is given';
is_deeply [msg_ids($dst, 'one')], [0 .. 5], 'the existing session is left alone';
$r = svc($dst, 'import', $bundle, '--dry-run', '--overwrite');
like $r->{out}, qr/would import 3 sessions/, '--dry-run says what it would do';
is_deeply [msg_ids($dst, 'one')], [0 .. 5], '--dry-run writes nothing';
$r = svc($dst, 'import', $bundle, '--overwrite');
is $r->{rc}, 0, '--overwrite: exit 0';
like $r->{out}, qr/imported 3 sessions/, '--overwrite: imported';
ok same_tree(native_dir($src, 'one'), native_dir($dst, 'one')), '--overwrite replaced, not merged';
is_deeply [msg_ids($dst, 'one')], [0 .. 3], 'the later messages are gone';
$r = svc($dst, 'sessions', 'show', 'one');
is jdecode($r->{out})->{message_count}, 4, 'the summary follows';
$r = svc($dst, 'sessions', 'list', '--all');
($one) = grep { $_->{session_id} eq 'one' } @{ jdecode($r->{out})->{sessions} };
is $one->{message_count}, 4, 'the listing index has the replaced summary at once';

# ---- a tarball ----
my $dst2 = new_home();
$r = svc($dst2, 'import', $tarball);
is $r->{rc}, 0, 'import .tar.gz: exit 0';
like $r->{out}, qr/imported 2 sessions/, 'import .tar.gz: counts';
ok same_tree(native_dir($src, 'two'), native_dir($dst2, 'two')), 'from the tarball: byte-equal';

# ---- a corrupted session file: that session is not imported, and the file is named ----
system('cp', '-a', $bundle, "$tmp/corrupt") == 0 or die;
my $victim = "$tmp/corrupt/native/session_two/agents/agent_svc-agent/messages/message_1.json";
my $data = slurp($victim);
substr($data, 10, 1) = substr($data, 10, 1) eq 'x' ? 'y' : 'x';
spit($victim, $data);
my $dst3 = new_home();
$r = svc($dst3, 'import', "$tmp/corrupt");
is $r->{rc}, 1, 'one corrupted file: exit 1';
like $r->{err}, qr{failed two: native/session_two/agents/agent_svc-agent/messages/message_1\.json: SHA-256 differs},
    'the failed session and the file are named';
like $r->{out}, qr/imported 2 sessions, skipped 0, failed 1/, 'the others are imported';
is_deeply [sessions_in($dst3->{root})], [qw(one three)], 'nothing of the corrupted session';
# an extra file not in the manifest fails its session too
system('cp', '-a', $bundle, "$tmp/extra") == 0 or die;
spit("$tmp/extra/native/session_one/planted.json", '{}');
$r = svc(new_home(), 'import', "$tmp/extra");
like $r->{err}, qr{failed one: native/session_one/planted\.json: not listed}, 'an unlisted file is named';
# a damaged file outside native/ refuses the whole bundle
system('cp', '-a', $bundle, "$tmp/badtop") == 0 or die;
spit("$tmp/badtop/messages.jsonl", "tampered\n");
my $dst4 = new_home();
$r = svc($dst4, 'import', "$tmp/badtop");
is $r->{rc}, 1, 'damaged messages.jsonl: exit 1';
like $r->{err}, qr/bundle damaged: messages\.jsonl/, 'named';
ok !-d $dst4->{root} || !sessions_in($dst4->{root}), 'nothing imported: the root is untouched';
ok !-e $dst4->{root}, 'not even created';
# not a bundle, a newer format, a missing bundle
make_path("$tmp/empty");
$r = svc(new_home(), 'import', "$tmp/empty");
like $r->{err}, qr/no manifest\.json/, 'a directory without a manifest is refused';
system('cp', '-a', $bundle, "$tmp/newer") == 0 or die;
my $mtext = slurp("$tmp/newer/manifest.json");
$mtext =~ s/"format_version": 1/"format_version": 2/;
spit("$tmp/newer/manifest.json", $mtext);
$r = svc(new_home(), 'import', "$tmp/newer");
like $r->{err}, qr/format_version 2 is not supported/, 'a newer format is refused';
# a manifest entry under a session id too long to be one: the bundle is damaged (not 500)
system('cp', '-a', $bundle, "$tmp/longsid") == 0 or die;
my $lm = jdecode(slurp("$tmp/longsid/manifest.json"));
push @{ $lm->{files} }, { path => 'native/session_' . ('x' x 200) . '/session.json',
                          sha256 => '0' x 64, bytes => 0 };
spit("$tmp/longsid/manifest.json", jencode($lm));
my $dst5 = new_home();
$r = svc($dst5, 'import', "$tmp/longsid");
is $r->{rc}, 1, 'a manifest naming an overlong session id: exit 1';
like $r->{err}, qr/bundle damaged: manifest\.json files\[\d+\] names no valid session/,
    'an overlong session id is named as damage';
ok !-e $dst5->{root}, 'an overlong session id: the root is untouched';
$r = svc(new_home(), 'import', "$tmp/nowhere.tar.gz");
is $r->{rc}, 1, 'a missing bundle: exit 1';
$r = svc(new_home(), 'import');
is $r->{rc}, 2, 'no bundle: exit 2';

# ---- hostile tarballs ----
sub tar_header {
    my ($name, $type, $size, $link) = @_;
    my $h = pack('a100 a8 a8 a8 a12 a12 A8 a1 a100 a6 a2 a32 a32 a8 a8 a155 a12',
        $name, sprintf('%07o', 0644), sprintf('%07o', 0), sprintf('%07o', 0),
        sprintf('%011o', $size), sprintf('%011o', time), ' ' x 8, $type, $link // '',
        "ustar", "00", '', '', '', '', '', '');
    my $sum = unpack('%32C*', $h);
    substr($h, 148, 8) = sprintf("%06o\0 ", $sum);
    return $h;
}
sub tarball {
    my ($path, @members) = @_;
    my $t = '';
    for my $m (@members) {
        my ($name, $type, $body, $link) = @$m;
        $body //= '';
        $t .= tar_header($name, $type, length $body, $link);
        $t .= $body . ("\0" x ((512 - length($body) % 512) % 512));
    }
    $t .= "\0" x 1024;
    gzip(\$t => $path) or die $GzipError;
}
my $victim_dir = "$tmp/victim";
make_path($victim_dir);
my @hostile = (
    ['absolute path', [["$victim_dir/abs.txt", '0', 'pwned']]],
    ['../ path', [['chat-export-x/manifest.json', '0', '{}'], ['chat-export-x/../../../victim/up.txt', '0', 'pwned']]],
    ['symbolic link', [['chat-export-x/native/session_a/link', '2', '', $victim_dir],
                       ['chat-export-x/native/session_a/link/ln.txt', '0', 'pwned']]],
    ['hard link', [['chat-export-x/hard', '1', '', '/etc/passwd']]],
    ['device', [['chat-export-x/dev', '3', '']]],
);
for my $h (@hostile) {
    my ($what, $members) = @$h;
    my $tb = "$tmp/hostile.tar.gz";
    tarball($tb, @$members);
    my $home = new_home();
    $r = svc($home, 'import', $tb);
    is $r->{rc}, 1, "hostile tarball ($what): exit 1";
    like $r->{err}, qr/refused/, "  refused: " . ($r->{err} =~ s/\n//r);
    ok !-e $home->{root}, '  nothing written in the root';
    is join(',', files_under($victim_dir)), '', '  nothing written outside';
}

# ---- another agent's bundle ----
my $other = new_home(sessions_extra => "  agent_id: other-agent\n");
is svc($other, 'chat', 'o1', 'from another agent')->{rc}, 0, 'a session of other-agent';
$r = svc($other, 'export', '--out', "$tmp/other");
my ($obundle) = $r->{out} =~ /: (\S+)\n\z/;
my $dst6 = new_home();
$r = svc($dst6, 'import', $obundle);
is $r->{rc}, 0, "another agent's bundle: exit 0";
like $r->{err}, qr/note: the bundle is of agent 'other-agent'.*agents\/agent_other-agent/, 'and it says so';
ok -f "$dst6->{root}/session_o1/agents/agent_other-agent/messages/message_0.json",
    'kept under its own agent directory';

# ---- killed in the middle: whole sessions or none ----
SKIP: {
    skip 'strace not installed', 1 unless system('strace -V >/dev/null 2>&1') == 0;
    my $checked = 0;
    my $partial = 0;
    my @kills = ((map { ['renameat2', $_] } 1 .. 3), (map { ['write', $_] } 3, 12, 25),
                 (map { ['openat', $_] } 20, 40));
    for my $k (@kills) {
        my ($call, $n) = @$k;
        my $home = new_home();
        {
            local $ENV{SVC_HOME} = $home->{home};
            system('strace', '-f', '-o', '/dev/null', '-e', "trace=$call", '-e',
                   "inject=$call:signal=KILL:when=$n", svc_bin(), 'import', $bundle);
        }
        my $res;
        $checked++;
        for my $sid (sessions_in($home->{root})) {
            unless (same_tree(native_dir($src, $sid), native_dir($home, $sid))) {
                $partial++;
                diag("after a kill at $call #$n: session $sid is partial");
            }
        }
        # a later import completes and cleans the staging left behind
        $res = svc($home, 'import', $bundle);
        is $res->{rc}, 0, "after a kill at $call #$n: the next import succeeds";
        is_deeply [sessions_in($home->{root})], [qw(one three two)], '  all sessions there';
        opendir(my $d, $home->{root});
        is scalar(grep { /^\.svc_import-/ } readdir $d), 0, '  no staging left';
    }
    is $partial, 0, "no partial session after $checked kills";
}

done_testing;
