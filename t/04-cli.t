#!/usr/bin/perl
# The `svc` tool as a user drives it: session id validation (nothing touched on refusal),
# listing (order, paging, filters, search), archive/unarchive, exit codes and error lines.
use strict;
use warnings;
use utf8;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SvcCliTest;

sub enc { my $s = shift; utf8::encode($s); $s }
sub one_error_line {
    my ($r, $code, $name) = @_;
    is($r->{rc}, 1, "$name: exit 1");
    like($r->{err}, qr/\Asvc: \Q$code\E: [^\n]+\n\z/, "$name: one stderr line 'svc: $code: ...'");
}
sub ids_of { [map { $_->{session_id} } @{ $_[0]{sessions} }] }

# ---- invalid session ids are refused before anything is touched ----
{
    my $h = new_home();
    is(svc($h, 'chat', 'exists', 'hi')->{rc}, 0, 'a valid session');
    my $before = tree_listing($h->{home});
    my @bad = ('', '.', '..', 'a/b', '../x', '/abs', 'x' x 129, '.x', '.hidden', enc('é'), 'a b', "a\nb",
        'a:b', 'a\\b', '*', 'session_x/..');
    for my $id (@bad) {
        my $show = $id =~ s/\n/\\n/gr;
        $show = substr($show, 0, 10) . '...' if length $show > 12;
        one_error_line(svc($h, 'chat', $id, 'hello'), 'invalid_session_id', "chat '$show'");
        for my $cmd (qw(show messages archive unarchive)) {
            one_error_line(svc($h, 'sessions', $cmd, $id), 'invalid_session_id', "sessions $cmd '$show'");
        }
    }
    is(tree_listing($h->{home}), $before, 'nothing was created or changed under SVC_HOME');

    my $id128 = join '', map { ('a' .. 'z', 'A' .. 'Z', 0 .. 9, '.', '_', '-')[$_ % 65] } 0 .. 127;
    is(length $id128, 128, '(a 128-character id)');
    my $r = svc($h, 'chat', $id128, 'long id');
    is($r->{rc}, 0, '128 characters are accepted') or diag($r->{err});
    ok(-d native_dir($h, $id128), 'its session directory exists');
    $r = svc($h, 'sessions', 'show', $id128);
    is(jdecode($r->{out})->{session_id}, $id128, 'and it can be shown');
    $r = svc($h, 'sessions', 'list');
    ok((grep { $_ eq $id128 } @{ ids_of(jdecode($r->{out})) }), 'and listed');
    $r = svc($h, 'chat', 'a.b-c_D9', 'x');
    is($r->{rc}, 0, 'dots, dashes, underscores, digits accepted');
}

# ---- a symlinked session directory is refused ----
{
    my $h = new_home();
    is(svc($h, 'chat', 'real', 'hi')->{rc}, 0, 'a real session');
    my $outside = File::Temp::tempdir('svc-out-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    symlink($outside, native_dir($h, 'link')) or die "symlink: $!";
    my $r = svc($h, 'sessions', 'show', 'link');
    is($r->{rc}, 1, 'show through a symlinked session dir fails');
    $r = svc($h, 'chat', 'link', 'hello');
    isnt($r->{rc}, 0, 'chat through a symlinked session dir fails');
    opendir(my $d, $outside);
    is_deeply([grep { !/^\.\.?$/ } readdir $d], [], 'nothing written outside the root');
}

# ---- listing: order, paging, filters, search ----
{
    my $h = new_home();
    my %title = (s1 => 'First session', s2 => 'Hello ALPHA world', s3 => 'third', s4 => 'fourth',
        s5 => 'fifth', s6 => 'alpha beta', s7 => enc('été à la plage'));
    for my $i (1 .. 7) {
        my $r = svc($h, 'chat', "s$i", $title{"s$i"});
        is($r->{rc}, 0, "create s$i") or diag($r->{err});
    }
    my $r = svc($h, 'sessions', 'list');
    is($r->{rc}, 0, 'list ok');
    my $l = jdecode($r->{out});
    is_deeply(ids_of($l), [map { "s$_" } reverse 1 .. 7], 'newest first');
    ok(!defined $l->{next_cursor}, 'no next_cursor when everything fits');
    my @u = map { $_->{updated_at} } @{ $l->{sessions} };
    is_deeply(\@u, [sort { $b cmp $a } @u], 'updated_at non-increasing');
    ok(!exists $l->{sessions}[0]{schema_version}, 'summaries carry no schema_version');

    # touch s2: it moves to the front
    is(svc($h, 'chat', 's2', 'again')->{rc}, 0, 'chat on s2');
    $l = jdecode(svc($h, 'sessions', 'list')->{out});
    is_deeply(ids_of($l), [qw(s2 s7 s6 s5 s4 s3 s1)], 'a session with a new run moves to the front');

    # paging with --limit 2 visits every session exactly once, in order
    my (@seen, $cursor, $pages);
    while (1) {
        my @args = ('sessions', 'list', '--limit', 2, defined $cursor ? ('--cursor', $cursor) : ());
        my $p = svc($h, @args);
        is($p->{rc}, 0, 'page ok') or last;
        my $pl = jdecode($p->{out});
        cmp_ok(scalar @{ $pl->{sessions} }, '<=', 2, 'page has at most 2');
        push @seen, @{ ids_of($pl) };
        $cursor = $pl->{next_cursor};
        last if !defined $cursor || ++$pages > 10;
    }
    is_deeply(\@seen, [qw(s2 s7 s6 s5 s4 s3 s1)], 'paging visits every session exactly once, newest first');
    is($pages, 3, 'four pages (3 cursors)');
    $r = svc($h, 'sessions', 'list', '--cursor', 'not-a-cursor!!');
    one_error_line($r, 'invalid_query', 'a bad cursor');

    # --q: case-insensitive title search
    $l = jdecode(svc($h, 'sessions', 'list', '--q', 'Alpha')->{out});
    is_deeply(ids_of($l), [qw(s2 s6)], '--q Alpha matches ALPHA and alpha, newest first');
    $l = jdecode(svc($h, 'sessions', 'list', '--q', 'SESSION')->{out});
    is_deeply(ids_of($l), ['s1'], '--q SESSION matches "First session"');
    $l = jdecode(svc($h, 'sessions', 'list', '--q', 'nomatch')->{out});
    is_deeply(ids_of($l), [], '--q without a match: empty list');
    $l = jdecode(svc($h, 'sessions', 'list', '--q', enc('été'))->{out});
    is_deeply(ids_of($l), ['s7'], '--q with non-ASCII text');
    $l = jdecode(svc($h, 'sessions', 'list', '--q', enc('ÉTÉ'))->{out});
    is_deeply(ids_of($l), ['s7'], '--q is case-insensitive for non-ASCII letters too');

    # archive / unarchive
    for my $sid (qw(s3 s5)) {
        $r = svc($h, 'sessions', 'archive', $sid);
        is($r->{rc}, 0, "archive $sid");
        is_deeply(jdecode($r->{out}), { archived => JSON::PP::true, session_id => $sid }, 'archive answer');
    }
    my $at = json_file(sidecar_path($h, 's3'))->{archived_at};
    like($at // '', TS_RE, 'archived_at set');
    select(undef, undef, undef, 0.01);
    $r = svc($h, 'sessions', 'archive', 's3');
    is($r->{rc}, 0, 'archive again: ok (idempotent)');
    is(json_file(sidecar_path($h, 's3'))->{archived_at}, $at, 'archived_at unchanged by the second archive');
    $l = jdecode(svc($h, 'sessions', 'list')->{out});
    is_deeply([sort @{ ids_of($l) }], [qw(s1 s2 s4 s6 s7)], 'archived sessions hidden by default');
    $l = jdecode(svc($h, 'sessions', 'list', '--archived')->{out});
    is_deeply([sort @{ ids_of($l) }], [qw(s3 s5)], '--archived: only archived');
    $l = jdecode(svc($h, 'sessions', 'list', '--all')->{out});
    is_deeply([sort @{ ids_of($l) }], [map { "s$_" } 1 .. 7], '--all: everything');
    is(jdecode(svc($h, 'sessions', 'show', 's3')->{out})->{archived}, JSON::PP::true, 'show: archived true');
    ok(svc($h, 'sessions', 'messages', 's3')->{rc} == 0, 'an archived session can still be read');

    my $sc_before = slurp(sidecar_path($h, 's3'));
    my @ids_before = msg_ids($h, 's3');
    $r = svc($h, 'chat', 's3', 'refused');
    one_error_line($r, 'session_archived', 'chat on an archived session');
    is(slurp(sidecar_path($h, 's3')), $sc_before, 'the refused run changed nothing in the sidecar');
    is_deeply([msg_ids($h, 's3')], \@ids_before, 'and stored no message');

    $r = svc($h, 'sessions', 'unarchive', 's3');
    is($r->{rc}, 0, 'unarchive');
    is_deeply(jdecode($r->{out}), { archived => JSON::PP::false, session_id => 's3' }, 'unarchive answer');
    $r = svc($h, 'sessions', 'unarchive', 's3');
    is($r->{rc}, 0, 'unarchive again: ok (idempotent)');
    my $sc = json_file(sidecar_path($h, 's3'));
    ok(!$sc->{archived} && !defined $sc->{archived_at}, 'archived false, archived_at null');
    $r = svc($h, 'chat', 's3', 'welcome back');
    is($r->{rc}, 0, 'chat works again after unarchive') or diag($r->{err});

    # --status: make s4 a repaired stale run (status error)
    my $p = sidecar_path($h, 's4');
    my $d = slurp($p);
    $d =~ s/"status": "idle"/"status": "running"/ or die;
    spit($p, $d);
    is(svc($h, 'sessions', 'show', 's4')->{rc}, 0, 'show repairs s4');
    $l = jdecode(svc($h, 'sessions', 'list', '--status', 'error')->{out});
    is_deeply(ids_of($l), ['s4'], '--status error');
    $l = jdecode(svc($h, 'sessions', 'list', '--status', 'idle')->{out});
    is_deeply([sort @{ ids_of($l) }], [qw(s1 s2 s3 s6 s7)], '--status idle (archived s5 hidden)');
    $l = jdecode(svc($h, 'sessions', 'list', '--status', 'idle', '--all')->{out});
    is_deeply([sort @{ ids_of($l) }], [qw(s1 s2 s3 s5 s6 s7)], '--status idle --all');
    $l = jdecode(svc($h, 'sessions', 'list', '--status', 'running')->{out});
    is_deeply(ids_of($l), [], '--status running: none');
    $r = svc($h, 'sessions', 'list', '--status', 'bogus');
    ok($r->{rc} == 1 || $r->{rc} == 2, '--status bogus refused (exit 1 or 2)');
    like($r->{err}, qr/status/, 'and the message names status');

    # paging combined with a filter
    my @seen2;
    undef $cursor;
    for (1 .. 10) {
        my $pl = jdecode(svc($h, 'sessions', 'list', '--limit', 1, '--status', 'idle',
            defined $cursor ? ('--cursor', $cursor) : ())->{out});
        push @seen2, @{ ids_of($pl) };
        $cursor = $pl->{next_cursor};
        last unless defined $cursor;
    }
    is_deeply([sort @seen2], [qw(s1 s2 s3 s6 s7)], 'paging a filtered list visits each match once');
}

# ---- sessions from other programs (Strands) show up; Z/no-fraction timestamps order right ----
{
    my $h = new_home();
    is(svc($h, 'chat', 'ours', 'ours')->{rc}, 0, 'our session');
    my $sc_upd = json_file(sidecar_path($h, 'ours'))->{updated_at};
    # two foreign sessions: one far older (no fraction, Z), one far newer (Z)
    for my $x (['old', '2001-02-03T04:05:06Z'], ['new', '2099-02-03T04:05:06.5Z']) {
        my ($sid, $ts) = @$x;
        my $dir = native_dir($h, $sid);
        my $mdir = "$dir/agents/agent_svc-agent/messages";
        system('mkdir', '-p', $mdir) == 0 or die;
        spit("$dir/session.json", qq({\n  "session_id": "$sid",\n  "session_type": "AGENT",\n  "created_at": "$ts",\n  "updated_at": "$ts"\n}));
        spit("$mdir/message_0.json", qq({\n  "message": {\n    "role": "user",\n    "content": [\n      {\n        "text": "foreign $sid"\n      }\n    ]\n  },\n  "message_id": 0,\n  "redact_message": null,\n  "created_at": "$ts",\n  "updated_at": "$ts"\n}));
    }
    my $l = jdecode(svc($h, 'sessions', 'list')->{out});
    is_deeply(ids_of($l), [qw(new ours old)], 'foreign sessions listed, ordered by their (Z) timestamps');
    my ($old) = grep { $_->{session_id} eq 'old' } @{ $l->{sessions} };
    is($old->{title}, 'foreign old', 'derived title');
}

# ---- exit codes ----
{
    my $h = new_home();
    my $r = svc($h);
    is($r->{rc}, 2, 'no command: exit 2');
    for my $args (['bogus'], ['chat'], ['chat', 'only-session'], ['chat', 'a', 'b', 'c'], ['sessions'],
        ['sessions', 'bogus'], ['sessions', 'show'], ['sessions', 'list', '--limit', '0'],
        ['sessions', 'list', '--limit', 'x'], ['sessions', 'list', '--bogus'], ['sessions', 'messages'],
        ['sessions', 'messages', 's', '--offset', '-1'], ['config'], ['config', 'bogus'], ['--bogus'])
    {
        $r = svc($h, @$args);
        is($r->{rc}, 2, "usage error (@$args): exit 2");
        like($r->{err}, qr/^svc: |usage/, "usage error (@$args): says why");
        is($r->{out}, '', "usage error (@$args): nothing on stdout");
    }
    $r = svc($h, '--version');
    is($r->{rc}, 0, '--version: exit 0');
    like($r->{out}, qr/^svc \d+\.\d+\.\d+\n\z/, '--version output');
    is(svc($h, '--help')->{rc}, 0, '--help: exit 0');
    $r = svc($h, 'config', 'check');
    is($r->{rc}, 0, 'config check: exit 0');
    like($r->{out}, qr/agents\.yaml: ok/, 'config check names the file');
    # a misspelt key (SPEC 19): named with its line and the nearest known key; exit 1
    my $ht = new_home(yaml_extra => "sesions:\n  root: /elsewhere\n");
    $r = svc($ht, 'config', 'check');
    is($r->{rc}, 1, 'config check with an unknown key: exit 1');
    like($r->{err}, qr/agents\.yaml:\d+:1: unknown key 'sesions' \(did you mean `sessions`\?\)/,
         'the key, its line and the nearest known key');
    unlike($r->{out}, qr/: ok/, 'not ok');
    $r = svc($ht, 'config', 'check', '--allow-unknown');
    is($r->{rc}, 0, 'config check --allow-unknown: exit 0');
    like($r->{out}, qr/agents\.yaml: ok/, 'and ok');
    is(svc($ht, 'config', 'check', '--bogus')->{rc}, 2, 'config check --bogus: usage, exit 2');
    $r = svc($h, 'config', 'show');
    is($r->{rc}, 0, 'config show: exit 0');
    ok(eval { jdecode($r->{out}); 1 }, 'config show prints JSON');

    one_error_line(svc($h, 'sessions', 'show', 'nope'), 'session_not_found', 'show a missing session');
    one_error_line(svc($h, 'sessions', 'messages', 'nope'), 'session_not_found', 'messages of a missing session');
    one_error_line(svc($h, 'sessions', 'archive', 'nope'), 'session_not_found', 'archive a missing session');
    ok(!-e native_dir($h, 'nope'), 'no directory created for the missing session');
    one_error_line(svc($h, 'chat', 'empty-input', ''), 'missing_field', 'chat with empty text');
    ok(!-e native_dir($h, 'empty-input'), 'empty input creates no session');
    $r = svc($h, 'sessions', 'list');
    is($r->{rc}, 0, 'list on an empty root: exit 0');
    is_deeply(jdecode($r->{out}), { sessions => [], next_cursor => undef }, 'empty list');

    my $bad = new_home(yaml_extra => "agent:\n  window_size: nope\n");
    $r = svc($bad, 'config', 'check');
    is($r->{rc}, 1, 'invalid config: exit 1');
    like($r->{err}, qr/\Asvc: config_error: [^\n]*agents\.yaml[^\n]*\n\z/, 'one line naming the file');
    $r = svc($bad, 'chat', 'x', 'y');
    is($r->{rc}, 1, 'invalid config refuses chat');
    ok(!-e $bad->{root}, 'nothing written with an invalid config');
    $r = svc($h, '--config', "$h->{home}/missing.yaml", 'config', 'check');
    is($r->{rc}, 1, '--config naming a missing file: exit 1');
}

# ---- sessions disabled: stateless chat, session commands refused ----
{
    my $h = new_home(sessions_extra => "  enabled: false\n");
    my $r = svc($h, 'chat', 'stateless', 'hello');
    is($r->{rc}, 0, 'chat runs statelessly') or diag($r->{err});
    like($r->{out}, qr/Echo: hello/, 'answer');
    ok(!-e native_dir($h, 'stateless'), 'nothing stored');
    one_error_line(svc($h, 'sessions', 'list'), 'sessions_disabled', 'list with sessions disabled');
    one_error_line(svc($h, 'sessions', 'show', 'x'), 'sessions_disabled', 'show with sessions disabled');
}

# ---- a session root that does not exist: the commands that read it say so ----
{
    my $h = new_home();
    ok(!-e $h->{root}, '(a home with no session root yet)');
    for my $cmd (['export', '--tar', '--out', $h->{home}], ['export', '--out', $h->{home}], ['fsck'],
                  ['fsck', '--repair']) {
        my $r = svc($h, @$cmd);
        one_error_line($r, 'not_found', "@$cmd on a missing root");
        like($r->{err}, qr/the session root \Q$h->{root}\E does not exist/, "@$cmd: names the root");
    }
    ok(!-e $h->{root}, 'and none was made');
    is(svc($h, 'sessions', 'list')->{rc}, 0, 'sessions list: an empty list (as the API answers)');
    is(svc($h, 'chat', 'first', 'hello')->{rc}, 0, 'chat makes the root');
    is(svc($h, 'fsck')->{rc}, 0, 'fsck then runs');
    my $r = svc($h, 'help');
    is($r->{rc}, 0, 'svc help: exit 0');
    like($r->{out}, qr/^usage: svc /, 'svc help: the usage, on stdout');
    $r = svc(new_home(yaml_extra => "agent:\n  window_size: nope\n"), 'help');
    is($r->{rc}, 0, 'svc help with a broken agents.yaml: exit 0 (the config is not read)');
}

done_testing();
