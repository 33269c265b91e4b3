#!/usr/bin/perl
# POST /api/v1/chat/sessions/export (SPEC 5) through nginx: downloads checked the way cgit
# checks its snapshots (headers, gunzip -t, the system tar, file count, every checksum),
# directory and tar.gz bundles, selection, destinations, damaged sessions, exports taken
# while runs write, and a round trip through `svc import` into a new root that a second
# pool then continues.
use strict;
use warnings;
use utf8;
use lib 't/lib';
use Test::More;
use Digest::SHA qw(sha256_hex);
use Encode ();
use File::Path qw(make_path);
use File::Temp qw(tempdir);
use SvcTest;
use SvcCliTest ();

my $home = SvcTest->make_home('');
SvcTest::write_file("$home/agents.yaml", SvcTest::with_defaults(
    "sessions:\n  export_default_dir: $home/exp\n  export_allowed_dirs: [\"$home/allowed\"]\n"));
my $s = SvcTest->start(home => $home, workers => 2);
my $root = $s->root;
my $J = JSON::PP->new->utf8->canonical;

sub chat {
    my $r = $s->chat(@_);
    is $r->{status}, 200, "chat $_[0]: $_[1]";
    return $r;
}
sub export { my (%b) = @_; $s->req(POST => '/api/v1/chat/sessions/export', body => \%b) }
sub slurp { my ($p) = @_; open my $fh, '<:raw', $p or return undef; local $/; <$fh> }
sub listing {
    my ($d) = @_;
    opendir(my $dh, $d) or return '';
    return join ',', sort grep { !/^\.\.?$/ } readdir $dh;
}
sub files_under { SvcTest::files_under(@_) }
# Every file of the bundle directory checked against its manifest; returns the manifest.
sub check_bundle {
    my ($dir, $what) = @_;
    my $m = eval { $J->decode(slurp("$dir/manifest.json")) };
    ok $m, "$what: manifest.json parses" or return;
    is $m->{format}, 'svc-chat-export', "$what: format";
    is $m->{format_version}, 1, "$what: format_version";
    my %listed = map { $_->{path} => $_ } @{ $m->{files} };
    my @files = map { substr($_, length($dir) + 1) } files_under($dir);
    is scalar(@files), scalar(keys %listed) + 1, "$what: file count = manifest files + manifest";
    my $bad = 0;
    for my $f (grep { $_ ne 'manifest.json' } @files) {
        my $e = $listed{$f};
        my $data = slurp("$dir/$f");
        $bad++, diag("$what: $f not listed") unless $e;
        next unless $e;
        $bad++, diag("$what: $f size") unless length($data) == $e->{bytes};
        $bad++, diag("$what: $f sha") unless sha256_hex($data) eq $e->{sha256};
    }
    is $bad, 0, "$what: every checksum re-computed matches";
    return $m;
}
sub jsonl { my ($t) = @_; map { $J->decode($_) } grep { length } split /\n/, $t // '' }

# ---- sessions ----
chat('alpha', 'hello alpha');
chat('alpha', 'second turn');
chat('beta', '/tool clock {}');
chat('gamma', 'to be archived');
is $s->req(POST => '/api/v1/chat/sessions/gamma/archive')->{status}, 200, 'gamma archived';

# ---- download ----
ok !-e "$home/exp", 'no export directory yet';
my $r = export(download => JSON::PP::true);
is $r->{status}, 200, 'download: 200';
is $r->{headers}{'content-type'}, 'application/gzip', 'download: Content-Type application/gzip';
like $r->{headers}{'content-disposition'},
    qr/^attachment; filename="chat-export-\d{8}T\d{6}Z-[0-9a-f]{6}\.tar\.gz"$/,
    'download: Content-Disposition attachment with the bundle name';
ok !-e "$home/exp", 'download: nothing written on the server';
my $tmp = tempdir('svc-exp-XXXXXX', TMPDIR => 1, CLEANUP => 1);
SvcTest::write_file("$tmp/dl.tar.gz", $r->{body});
is system('gunzip', '-t', "$tmp/dl.tar.gz"), 0, 'download: gunzip -t passes';
make_path("$tmp/x");
is system('tar', '-xzf', "$tmp/dl.tar.gz", '-C', "$tmp/x"), 0, 'download: system tar extracts it';
my ($top) = listing("$tmp/x");
like $top, qr/^chat-export-\d{8}T\d{6}Z-[0-9a-f]{6}$/, 'download: one top directory, the bundle';
my $m = check_bundle("$tmp/x/$top", 'download');
is $m->{session_count}, 2, 'download: archived session left out by default';
is $m->{agent_id}, 'svc-agent', 'manifest agent_id';
ok $m->{export_id} && $m->{created_at} && $m->{generator}, 'manifest id, time, generator';

# ---- directory bundle ----
$r = export();
is $r->{status}, 200, 'dir export: 200';
my $j = $r->{json};
ok $j->{ok}, 'ok true';
is $j->{format}, 'dir', 'format dir';
like $j->{export_dir}, qr{^\Q$home\E/exp/chat-export-\d{8}T\d{6}Z-[0-9a-f]{6}$}, 'export_dir under export_default_dir';
is $j->{session_count}, 2, 'session_count';
is $j->{message_count}, 4 + 4, 'message_count (alpha 4, beta 4)';
ok $j->{bytes} > 0, 'bytes';
my %top = map { $_->{path} => 1 } @{ $j->{files} };
ok $top{'manifest.json'} && $top{'messages.jsonl'} && $top{'sessions.json'}
    && $top{'openai_dataset.jsonl'}, 'files names the top-level files';
my $d = $j->{export_dir};
$m = check_bundle($d, 'dir');
my $sessions = $J->decode(slurp("$d/sessions.json"));
is_deeply [sort map { $_->{session_id} } @$sessions], ['alpha', 'beta'], 'sessions.json: summaries';
ok !exists $sessions->[0]{schema_version}, 'summaries have no schema_version';
my @rows = jsonl(slurp("$d/messages.jsonl"));
is scalar(@rows), 8, 'messages.jsonl: one row per message';
my ($row) = grep { $_->{session_id} eq 'alpha' && $_->{message_id} == 1 } @rows;
is $row->{agent_id}, 'svc-agent', 'row agent_id';
is $row->{role}, 'assistant', 'row role';
like $row->{content}, qr/Echo: hello alpha/, 'row content';
ok $row->{raw_native}{content} && $row->{openai_messages}[0]{role} eq 'assistant', 'raw_native and openai projection';
my @ds = jsonl(slurp("$d/openai_dataset.jsonl"));
is scalar(@ds), 2, 'openai_dataset.jsonl: one row per session';
ok((grep { grep { ($_->{tool_calls} // [])->[0] } @{ $_->{messages} } } @ds), 'dataset carries tool_calls');
my $md = Encode::decode("UTF-8", slurp("$d/transcripts/beta.md"));
like $md, qr/^# \/tool clock \{\}\n/, 'transcript: # title';
like $md, qr/Session `beta` · agent `svc-agent` · created .* · updated .* · 4 messages · status idle/, 'transcript: metadata line';
like $md, qr/^## user · \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/m, 'transcript: ## role · time';
like $md, qr/\*\*Tool call\*\* `clock`.*\n\n```json\n\{\}\n```/s, 'transcript: tool call as fenced json';
like $md, qr/\*\*Tool result\*\*.*\n\n```json\n\[/s, 'transcript: tool result as fenced json';
for my $f (files_under("$root/session_alpha")) {
    next if $f =~ m{/\.svc\.(run\.)?lock$};
    my $rel = substr($f, length("$root/session_alpha") + 1);
    if ($rel =~ /\.tmp-spare$/) {    # a writer's spare (core/fsio.h): never exported
        ok !-e "$d/native/session_alpha/$rel", "no spare in the native copy: $rel";
        next;
    }
    is slurp("$d/native/session_alpha/$rel"), slurp($f), "native copy byte-equal: $rel";
}
ok !-e "$d/native/session_alpha/.svc.lock" && !-e "$d/native/session_alpha/.svc.run.lock",
    'no lock files in the native copy';
is listing("$home/exp") =~ /\.tmp-/ ? 1 : 0, 0, 'no temporary name left';

# ---- a transcript with media, reasoning and a block it does not know ----
chat('media', 'look at this');
my $mpath = "$root/session_media/agents/agent_svc-agent/messages/message_2.json";
SvcTest::write_file($mpath, $J->encode({
    message => { role => 'user', content => [
        { text => 'Here are ```three``` files' },
        { image => { format => 'png', source => { bytes => { __bytes_encoded__ => JSON::PP::true, data => 'iVBORw0KGgo=' } } } },
        { document => { format => 'pdf', name => 'report', source => { bytes => { __bytes_encoded__ => JSON::PP::true, data => 'JVBERi0xLjQK' } } } },
        { cachePoint => { type => 'default' } } ] },
    message_id => 2, redact_message => undef,
    created_at => '2026-05-16T08:15:30.123456+00:00', updated_at => '2026-05-16T08:15:30.123456+00:00' }));
SvcTest::write_file("$root/session_media/agents/agent_svc-agent/messages/message_3.json", $J->encode({
    message => { role => 'assistant', content => [
        { reasoningContent => { reasoningText => { text => "first thought\nsecond thought", signature => 'sig' } } },
        { text => 'Seen.' } ] },
    message_id => 3, redact_message => undef,
    created_at => '2026-05-16T08:15:31.123456+00:00', updated_at => '2026-05-16T08:15:31.123456+00:00' }));
$r = export(session_ids => ['media']);
is $r->{status}, 200, 'media export: 200';
$md = Encode::decode('UTF-8', slurp("$r->{json}{export_dir}/transcripts/media.md"));
like $md, qr/^## user · 2026-05-16 08:15:30 UTC$/m, 'media: the message time, readable';
like $md, qr/\*\[image: png, 8 bytes\]\*/, 'media: the image named with format and size';
like $md, qr/\*\[document "report": pdf, 9 bytes\]\*/, 'media: the document with name, format and size';
unlike $md, qr/iVBORw0KGgo|JVBERi0xLjQK/, 'media: no base64 in the transcript';
like $md, qr/```json\n\{\n  "cachePoint": \{/, 'media: an unknown block as fenced json';
like $md, qr/> \*Reasoning:\*\n>\n> first thought\n> second thought/, 'media: reasoning quoted';
like $md, qr/Here are ```three``` files/, 'media: text kept as it is';
like $md, qr/· 4 messages ·/, 'media: message count';

# ---- tar.gz on the server ----
$r = export(format => 'tar.gz');
is $r->{status}, 200, 'tar.gz export: 200';
like $r->{json}{export_file}, qr{/chat-export-\d{8}T\d{6}Z-[0-9a-f]{6}\.tar\.gz$}, 'export_file';
is system('gunzip', '-t', $r->{json}{export_file}), 0, 'tar.gz: gunzip -t';
make_path("$tmp/y");
is system('tar', '-xzf', $r->{json}{export_file}, '-C', "$tmp/y"), 0, 'tar.gz: extracts';
check_bundle("$tmp/y/" . listing("$tmp/y"), 'tar.gz');

# ---- selection ----
$r = export(include_archived => JSON::PP::true, download => JSON::PP::false);
is $r->{json}{session_count}, 4, 'include_archived: 4 sessions';
$r = export(session_ids => ['gamma']);
is $r->{json}{session_count}, 1, 'named: an archived session by name';
$r = export(session_id => 'beta', session_ids => ['alpha']);
is $r->{json}{session_count}, 2, 'session_id and session_ids together';
$r = export(status => ['error']);
is $r->{json}{session_count}, 0, 'status filter: none in error';
$r = export(status => ['idle'], updated_after => '2999-01-01T00:00:00Z');
is $r->{json}{session_count}, 0, 'updated_after in the future: none';
$r = export(updated_before => '2999-01-01T00:00:00Z');
is $r->{json}{session_count}, 3, 'updated_before in the future: all unarchived';
$r = export(session_ids => undef);
is $r->{json}{session_count}, 3, 'session_ids null: as absent (the worker once aborted on it)';
my $before = listing("$home/exp");
$r = export(session_ids => ['alpha', 'nope-1', 'nope-2']);
is $r->{status}, 404, 'unknown named session: 404';
is $r->{json}{error}{code}, 'session_not_found', 'session_not_found';
like $r->{json}{error}{message}, qr/nope-1.*nope-2/, 'the message lists them';
is listing("$home/exp"), $before, 'nothing written';

# ---- bad input ----
my @bad = (
    [{ format => 'zip' }, 422, 'invalid_field', 'format'],
    [{ session_ids => 'alpha' }, 422, 'invalid_field', 'session_ids'],
    [{ session_ids => [1] }, 422, 'invalid_field', 'session_ids'],
    [{ include_archived => 'yes' }, 422, 'invalid_field', 'include_archived'],
    [{ download => 1 }, 422, 'invalid_field', 'download'],
    [{ updated_after => 'yesterday' }, 422, 'invalid_field', 'updated_after'],
    [{ status => ['sleeping'] }, 422, 'invalid_field', 'status'],
    [{ status => [] }, 422, 'invalid_field', 'status'], # matched no status, and exported every session
    [{ output_dir => 5 }, 422, 'invalid_field', 'output_dir'],
    [{ session_ids => ['alpha', '../etc'] }, 400, 'invalid_session_id', 'session_ids[1]'], # was named session_id
    # a misspelt filter would otherwise export every session
    [{ sesion_ids => ['alpha'] }, 422, 'invalid_field', 'sesion_ids'],
    [{ session_ids => ['alpha'], Download => JSON::PP::true }, 422, 'invalid_field', 'Download'],
    # a download is a .tar.gz sent back, nothing written on the server
    [{ download => JSON::PP::true, format => 'dir' }, 422, 'invalid_field', 'format'],
    [{ download => JSON::PP::true, output_dir => '/tmp' }, 422, 'invalid_field', 'output_dir'],
    # a name too long to quote whole is not quoted (never a cut one, never half a character)
    [{ "\x{e9}" x 40 => 1 }, 422, 'invalid_field', undef],
);
for my $b (@bad) {
    my ($body, $st, $code, $param) = @$b;
    $r = export(%$body);
    is $r->{status}, $st, "bad input $code " . $J->encode($body);
    is $r->{json}{error}{code}, $code, "  code $code";
    is $r->{json}{error}{param}, $param, "  param" if defined $param;
    ok utf8::is_utf8($r->{body}) || utf8::decode(my $copy = $r->{body}), '  the answer is UTF-8';
}
$r = $s->req(POST => '/api/v1/chat/sessions/export', body => '{"format":');
is $r->{status}, 400, 'broken JSON: 400';
is $r->{json}{error}{code}, 'invalid_json', 'invalid_json';
is listing("$home/exp"), $before, 'bad input wrote nothing';

# ---- destinations ----
make_path("$home/outside");
symlink("$home/outside", "$home/exp/link") or die "symlink: $!";
for my $dest ('/tmp', "$home/outside", "$home/exp/../outside", "$home/exp/new/../../outside",
              "$home/exp/link", "$home/exp/link/sub", '~/../../etc') {
    $r = export(output_dir => $dest);
    is $r->{status}, 403, "destination $dest: 403";
    is $r->{json}{error}{code}, 'export_dir_forbidden', '  export_dir_forbidden';
}
is listing("$home/outside"), '', 'nothing written outside';
ok !-e "$home/exp/new", 'no directory created for a refused destination';
$r = export(output_dir => "$home/allowed/sub/deeper");
is $r->{status}, 200, 'export_allowed_dirs: a new directory inside is created';
like $r->{json}{export_dir}, qr{^\Q$home\E/allowed/sub/deeper/chat-export-}, '  and used';

# ---- same second: distinct bundles ----
my %names;
my $same = 0;
for (1 .. 6) {
    my ($x, $y) = (export()->{json}{export_dir}, export()->{json}{export_dir});
    $names{$_}++ for $x, $y;
    my ($tx) = $x =~ /chat-export-(\w+)-/;
    my ($ty) = $y =~ /chat-export-(\w+)-/;
    $same++ if $tx eq $ty;
    last if $same;
}
ok $same, 'two exports fell in the same second';
ok !(grep { $_ > 1 } values %names), 'every export has its own directory';

# ---- a damaged message file ----
chat('dmg', 'one');
chat('dmg', 'two');
my $mf = "$root/session_dmg/agents/agent_svc-agent/messages/message_1.json";
SvcTest::write_file($mf, '{"message": {"role": "assist');
$r = export(session_ids => ['dmg']);
is $r->{status}, 200, 'damaged session: the export succeeds';
my ($w) = grep { $_->{file} =~ m{message_1\.json$} } @{ $r->{json}{warnings} };
ok $w, 'warning names the damaged file';
is $w->{file}, 'native/session_dmg/agents/agent_svc-agent/messages/message_1.json', '  its bundle path';
is $w->{session_id}, 'dmg', '  and the session';
$d = $r->{json}{export_dir};
$m = check_bundle($d, 'damaged');
ok((grep { $_->{file} =~ /message_1/ } @{ $m->{warnings} }), 'manifest warnings name it too');
is slurp("$d/native/session_dmg/agents/agent_svc-agent/messages/message_1.json"), slurp($mf),
    'the damaged file is exported as it is';
is scalar(jsonl(slurp("$d/messages.jsonl"))), 3, 'the readable messages are exported';
unlink $mf;
ok !-e $mf, 'damaged file removed again';

# ---- a session that cannot be read at all: the export fails naming it, unless
# allow_partial (a nightly backup must not end quietly short) ----
my $lk = "$root/session_dmg/.svc.lock";
unlink $lk;
mkdir $lk or die "mkdir $lk: $!";    # its lock cannot be taken: the session cannot be read
$before = listing("$home/exp");
for my $c ([{ session_ids => ['alpha', 'dmg'] }, 'by name'],
           [{ session_ids => ['dmg'], format => 'tar.gz' }, 'by name, tar.gz'],
           [{}, 'by filter']) {
    my ($b, $what) = @$c;
    $r = export(%$b);
    is $r->{status}, 500, "left out ($what): the export fails";
    is $r->{json}{error}{code}, 'io_error', "left out ($what): the cause's code";
    like $r->{json}{error}{message}, qr/left out 1 of \d+ sessions \(dmg\): session lock: .*allow_partial/,
        "left out ($what): the message names the session, the cause and the option";
    is listing("$home/exp"), $before, "left out ($what): nothing written";
}
$r = export(download => JSON::PP::true);
SvcTest::write_file("$tmp/cut.tar.gz", $r->{body} // '');
isnt system("gunzip -t $tmp/cut.tar.gz 2>/dev/null"), 0, 'left out (download): the archive is cut, never whole';
$r = export(allow_partial => JSON::PP::true);
is $r->{status}, 200, 'allow_partial: the export succeeds';
is_deeply $r->{json}{left_out}, ['dmg'], 'allow_partial: left_out names the session';
ok((grep { $_->{session_id} eq 'dmg' } @{ $r->{json}{warnings} }), 'allow_partial: a warning says why');
ok !-e "$r->{json}{export_dir}/native/session_dmg", 'allow_partial: the session is not in the bundle';
$m = check_bundle($r->{json}{export_dir}, 'allow_partial');
is $m->{session_count}, $r->{json}{session_count}, 'allow_partial: the manifest counts what it holds';
is export(allow_partial => 'yes')->{status}, 422, 'allow_partial must be a boolean';
rmdir $lk or die "rmdir $lk: $!";
$r = export();
is_deeply $r->{json}{left_out}, [], 'readable again: nothing left out';

# ---- export while runs write: never half a turn ----
my $bad_count = 0;
my $exports = 0;
for my $n (1 .. 4) {
    my $run = $s->req(POST => '/api/chat/runs', body => { session_id => 'busy',
        messages => [{ role => 'user', content => "/slow 40 turn $n of the busy session" }] });
    is $run->{status}, 202, "run $n started";
    my $id = $run->{json}{run_id};
    while (1) {
        my $e = export(session_ids => ['busy'], download => JSON::PP::false);
        $exports++;
        # not asserted: seen once under heavy load, not reproduced; say what it was
        diag "an export during a run answered $e->{status}: " . substr($e->{body} // '', 0, 300)
            if $e->{status} != 200;
        if (my $bd = $e->{json}{export_dir}) {
            my @ids = map { /message_(\d+)\.json$/ ? $1 : () }
                files_under("$bd/native/session_busy/agents/agent_svc-agent/messages");
            my $rows = () = jsonl(slurp("$bd/messages.jsonl"));
            $bad_count++, diag("export with $rows rows, " . scalar(@ids) . " files")
                if $rows % 2 || @ids != $rows;
        }
        my $st = $s->req(GET => "/api/chat/runs/$id")->{json}{status};
        last if $st ne 'running';
    }
    $s->wait_run($id);
}
ok $exports >= 4, "exports taken during runs ($exports)";
is $bad_count, 0, 'every bundle holds whole turns only (message count even, files = rows)';

# ---- round trip: import into an empty root, then a second pool continues ----
$r = export(session_ids => ['alpha', 'beta', 'gamma']);
$d = $r->{json}{export_dir};
my $home2 = SvcTest->make_home('');
my $svc = SvcTest::build() . '/svc';
my $out = `SVC_HOME=$home2 $svc import $d 2>&1`;
is $?, 0, 'svc import: exit 0';
like $out, qr/imported 3 sessions, skipped 0, failed 0/, 'svc import: counts';
my $s2 = SvcTest->start(home => $home2, workers => 2);
my $root2 = $s2->root;
for my $sid (qw(alpha beta gamma)) {
    my @a = grep { !m{/\.svc} && !/\.tmp-spare$/ } files_under("$root/session_$sid");
    my @b = grep { !m{/\.svc} } files_under("$root2/session_$sid");
    is scalar(@b), scalar(@a), "$sid: same number of files";
    my $diff = 0;
    for my $f (@a) {
        (my $g = $f) =~ s/^\Q$root\E/$root2/;
        my ($x, $y) = (slurp($f), slurp($g));
        # the memory state names the memory file of the root it is on (SPEC 19)
        s/"memory_file": "[^"]*"/"memory_file": "*"/ for grep { defined } $x, $y;
        $diff++, diag("differs: $g") unless defined $y && $y eq $x;
    }
    is $diff, 0, "$sid: native files and sidecars byte-equal (but the memory file's path)";
    like slurp("$root2/session_$sid/svc_memory.json") // '', qr{"memory_file": "\Q$home2\E/memory/},
         "$sid: its memory state names the new home's memory file";
}
my $l = $s2->req(GET => '/api/v1/chat/sessions?include_archived=true');
is_deeply [sort map { $_->{session_id} } @{ $l->{json}{sessions} }], [qw(alpha beta gamma)],
    'the new pool lists the imported sessions';
$r = $s2->req(POST => '/api/chat', body => { session_id => 'alpha',
    messages => [{ role => 'user', content => 'after import' }] });
is $r->{status}, 200, 'the imported session continues';
like $r->{json}{content}, qr/given 4 earlier messages/, 'with its history';
ok -e "$root2/session_alpha/agents/agent_svc-agent/messages/message_4.json"
    && -e "$root2/session_alpha/agents/agent_svc-agent/messages/message_5.json", 'ids continue at 4';
is $s2->req(GET => '/api/v1/chat/sessions/alpha')->{json}{message_count}, 6, 'summary counts 6';
$s2->stop;

# ---- a download of many sessions is whole (the archive passes through the compressor
# thread in many buffers: none lost, none twice, none out of order) ----
{
    my $n = 600;
    my $home4 = SvcTest->make_home('');
    my $gen = SvcCliTest::gen_sessions_bin($tmp);
    is system($gen, "$home4/agents/native_sessions", 'many-', 0, $n, 20), 0, "$n sessions of 20 messages";
    my $s4 = SvcTest->start(home => $home4, workers => 1);
    my $d = $s4->req(POST => '/api/v1/chat/sessions/export', body => { download => JSON::PP::true });
    is $d->{status}, 200, "many: $n sessions downloaded";
    SvcTest::write_file("$tmp/many.tar.gz", $d->{body} // '');
    ok length($d->{body} // '') > 1_000_000, 'many: more than a megabyte, many buffers';
    is system('gunzip', '-t', "$tmp/many.tar.gz"), 0, 'many: gunzip -t passes';
    make_path("$tmp/many");
    is system('tar', '-xzf', "$tmp/many.tar.gz", '-C', "$tmp/many"), 0, 'many: system tar extracts it';
    my ($mtop) = listing("$tmp/many");
    my $mm = check_bundle("$tmp/many/$mtop", 'many');
    is $mm->{session_count}, $n, "many: $n sessions in the manifest";
    is $mm->{message_count}, 20 * $n, 'many: every message';
    my $list = $J->decode(slurp("$tmp/many/$mtop/sessions.json"));
    is_deeply [map { $_->{session_id} } @$list], [map { sprintf 'many-%06d', $_ } 0 .. $n - 1],
        'many: sessions.json lists each session once, in id order';
    $s4->stop;
}

# ---- the selection: counts from the files, not the listing; named ids sorted, once each ----
{
    my $home5 = SvcTest->make_home('');
    my $gen = SvcCliTest::gen_sessions_bin($tmp);
    is system($gen, "$home5/agents/native_sessions", 'sel-', 0, 3, 2), 0, '3 sessions of 2 messages';
    my $s5 = SvcTest->start(home => $home5, workers => 1);
    is $s5->req(GET => '/api/v1/chat/sessions')->{json}{sessions}[0]{message_count}, 2,
        'listed with 2 messages';
    # another program (a Strands agent) adds a third message: the listing learns it at its
    # next list, the export (which no longer asks the listing to recount) from the files
    my $md = "$home5/agents/native_sessions/session_sel-000001/agents/agent_svc-agent/messages";
    SvcTest::write_file("$md/message_2.json", slurp("$md/message_0.json") =~ s/"message_id": 0/"message_id": 2/r);
    my $d = $s5->req(POST => '/api/v1/chat/sessions/export', body => { download => JSON::PP::true });
    is $d->{status}, 200, 'sel: downloaded';
    SvcTest::write_file("$tmp/sel.tar.gz", $d->{body} // '');
    make_path("$tmp/sel");
    is system('tar', '-xzf', "$tmp/sel.tar.gz", '-C', "$tmp/sel"), 0, 'sel: extracted';
    my ($top) = listing("$tmp/sel");
    my $m = check_bundle("$tmp/sel/$top", 'sel');
    is $m->{message_count}, 7, 'sel: the message added behind svc counted';
    my %count = map { $_->{session_id} => $_->{message_count} }
        @{ $J->decode(slurp("$tmp/sel/$top/sessions.json")) };
    is $count{'sel-000001'}, 3, 'sel: its summary counts 3';
    $d = $s5->req(POST => '/api/v1/chat/sessions/export',
                  body => { download => JSON::PP::true,
                            session_ids => ['sel-000002', 'sel-000000', 'sel-000002'] });
    is $d->{status}, 200, 'named: downloaded';
    SvcTest::write_file("$tmp/named.tar.gz", $d->{body} // '');
    make_path("$tmp/named");
    is system('tar', '-xzf', "$tmp/named.tar.gz", '-C', "$tmp/named"), 0, 'named: extracted';
    ($top) = listing("$tmp/named");
    like slurp("$tmp/named/$top/manifest.json"),
        qr/\n  "selection": \{\n    "session_ids": \[\n      "sel-000000",\n      "sel-000002"\n    \]\n  \},\n  "warnings": \[\],\n/,
        'named: the manifest lists the ids sorted, once each, indented as the rest';
    $s5->stop;
}

# ---- sessions disabled ----
$s->stop;
my $s3 = SvcTest->start(config => "sessions:\n  enabled: false\n");
$r = $s3->req(POST => '/api/v1/chat/sessions/export', body => {});
is $r->{status}, 404, 'sessions disabled: 404';
is $r->{json}{error}{code}, 'sessions_disabled', 'sessions_disabled';
$s3->stop;

done_testing;
