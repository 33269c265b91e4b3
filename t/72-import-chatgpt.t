#!/usr/bin/perl
# `svc import --from chatgpt` (SPEC 13.3): ChatGPT's conversations.json, or the export .zip
# holding it (deflated or stored), one session per conversation along its current branch
# with its title and times; the other branches and what is not user or assistant text are
# counted; an existing id is skipped; a damaged file is one error line and nothing written.
use strict;
use warnings;
use utf8;
use lib 't/lib';
use Test::More;
use File::Temp qw(tempdir);
use IO::Compress::Zip qw(zip $ZipError :zip_method);
use SvcCliTest;
use SvcTest ();

my $fixture = 't/data/chatgpt-conversations.json';
my $tmp = tempdir('svc-cg-XXXXXX', TMPDIR => 1, CLEANUP => 1);
my $lisbon = 'chatgpt-6790b2c1-0001-8000-a000-000000000001';
my $python = 'chatgpt-6790b2c1-0002-8000-a000-000000000002';
my $counts = qr/^imported 2 sessions \(8 messages\) of 3 conversations, skipped 1; left out: other branches 1, messages that are not user or assistant text 2\n\z/;

sub listing { join ' ', map { "$_->{session_id}:$_->{message_count}" }
    @{ jdecode(svc($_[0], 'sessions', 'list')->{out})->{sessions} } }

# ---- conversations.json ----
my $h = new_home();
my $r = svc($h, 'import', '--from', 'chatgpt', $fixture);
is $r->{rc}, 0, 'import: exit 0';
like $r->{out}, $counts, 'the counts, and no progress bar on a pipe';
like $r->{err}, qr/^svc: skipped chatgpt-6790b2c1-0003\S+: no user or assistant text/m,
    'the conversation without text is reported as skipped';
is listing($h), "$python:4 $lisbon:4", 'one session per conversation, newest first';

my $s = jdecode(svc($h, 'sessions', 'show', $lisbon)->{out});
is $s->{title}, 'Lisbon trip', 'the title';
is $s->{created_at}, '2024-06-03T07:33:20.123456+00:00', 'created_at is create_time';
is $s->{updated_at}, '2024-06-03T07:35:25.373456+00:00', 'updated_at is update_time';
is $s->{status}, 'idle', 'idle';
my $m = jdecode(svc($h, 'sessions', 'messages', $lisbon)->{out})->{messages};
is join('|', map { "$_->{role}:$_->{content}" } @$m),
    'user:Plan a 3-day trip to Lisbon, please.'
    . '|assistant:Here is a 3-day plan: Baixa and Chiado, then Belém with its pastéis, then a tram ride.'
    . '|user:Add a day trip to Sintra.'
    . '|assistant:Sintra: take the train from Rossio; Pena Palace opens at 9:30.',
    'the current branch (the regenerated answer), tool and code messages left out';
is $m->[1]{created_at}, '2024-06-03T07:33:50.123456+00:00', 'a message keeps its create_time';
my $p = jdecode(svc($h, 'sessions', 'messages', $python)->{out})->{messages};
is $p->[0]{content}, 'Why does sorted() return a list in Python?', 'the text part of a multimodal message';
is_deeply $p->[0]{raw_native}, { role => 'user', content => [{ text => 'Why does sorted() return a list in Python?' }] },
    'stored as a Strands message';

# the sessions are Strands' layout: message files in order, agent.json, session.json
ok -f native_dir($h, $lisbon) . '/session.json', 'session.json';
ok -f native_dir($h, $lisbon) . '/agents/agent_svc-agent/agent.json', 'agent.json';
is_deeply [msg_ids($h, $lisbon)], [0 .. 3], 'message_0..3.json';

# searchable at once
is join(' ', map { "$_->{session_id}/$_->{message_id}" } @{ jdecode(svc($h, 'search', 'pena palace')->{out})->{results} }),
    "$lisbon/3", 'svc search finds imported text';
is scalar @{ jdecode(svc($h, 'search', 'porto')->{out})->{results} }, 0, 'not the other branch';

# again: everything is skipped, nothing changes
my $before = tree_listing($h->{root});
$r = svc($h, 'import', '--from', 'chatgpt', $fixture);
is $r->{rc}, 0, 'a second import: exit 0';
like $r->{out}, qr/^imported 0 sessions \(0 messages\) of 3 conversations, skipped 3;/, 'all skipped';
like $r->{err}, qr/^svc: skipped \Q$lisbon\E: exists$/m, 'as existing';
is tree_listing($h->{root}), $before, 'nothing changed';

# --dry-run writes nothing
my $d = new_home();
$r = svc($d, 'import', '--from', 'chatgpt', '--dry-run', $fixture);
is $r->{rc}, 0, '--dry-run: exit 0';
like $r->{out}, qr/^would import 2 sessions \(8 messages\)/, '--dry-run counts';
ok !-e $d->{root}, '--dry-run writes nothing';

# ---- the export .zip, deflated and stored ----
# as ChatGPT ships it: chat.html, user.json and conversations.json at the top
spit("$tmp/chat.html", "<html><body>chat</body></html>\n");
spit("$tmp/user.json", '{"id": "user-1", "email": "a\@example.com"}');
spit("$tmp/conversations.json", slurp($fixture));
for my $method ([deflated => ZIP_CM_DEFLATE], [stored => ZIP_CM_STORE]) {
    my $zipf = "$tmp/export-$method->[0].zip";
    zip [ map { "$tmp/$_" } qw(chat.html conversations.json user.json) ] => $zipf,
        Method => $method->[1], FilterName => sub { s{.*/}{} }
        or die "zip: $ZipError";
    my $z = new_home();
    $r = svc($z, 'import', '--from', 'chatgpt', $zipf);
    is $r->{rc}, 0, "a $method->[0] .zip: exit 0";
    like $r->{out}, $counts, "a $method->[0] .zip: the same counts";
    is listing($z), "$python:4 $lisbon:4", "a $method->[0] .zip: the same sessions";
}

# ---- a progress bar on a terminal (script(1) gives svc one) ----
SKIP: {
    skip 'script(1) not installed', 1 unless system('script -V >/dev/null 2>&1') == 0;
    my $t = new_home();
    local $ENV{SVC_HOME} = $t->{home};
    my $cmd = svc_bin() . " import --from chatgpt $fixture";
    like `script -qec '$cmd' /dev/null`, qr{\rimport \[#+\.*\] \d/2 sessions}, 'a terminal gets the progress bar';
}

# ---- damaged files: one error line, exit 1, nothing written ----
my $json = slurp($fixture);
my $zipped = slurp("$tmp/export-deflated.zip");
my $cut_json = substr($json, 0, length($json) / 2);
(my $nowhere = $json) =~ s/"current_node": "a-3"/"current_node": "a-404"/;
(my $cycle = $json) =~ s/"parent": "client-created-root"/"parent": "a-3"/;
(my $notarray = $json) =~ s/^\[/{"x": [/;
$notarray =~ s/\]\s*\z/]}/;
my $badcrc = $zipped;
my $at = index($badcrc, 'conversations.json') + 200; # inside the member's compressed data
substr($badcrc, $at, 1) = chr(ord(substr($badcrc, $at, 1)) ^ 0xff);
my $huge = $zipped; # the central directory claims 4 GB inflated: refused before any allocation
for (my $at = 0; ($at = index($huge, "PK\x01\x02", $at)) >= 0; $at++) {
    substr($huge, $at + 24, 4) = pack('V', 0xfffffff0)
        if substr($huge, $at + 46, 18) eq 'conversations.json';
}
my $nomember = slurp("$tmp/export-stored.zip");
$nomember =~ s/conversations\.json/conversations.jsox/g;
my %bad = (
    'JSON cut in half'             => [$cut_json, qr/^svc: invalid_json: /],
    'current_node names no node'   => [$nowhere, qr/^svc: invalid_field: conversations\.json: conversation 2: names a node its mapping does not have: a-404$/],
    'parents in a cycle'           => [$cycle, qr/^svc: invalid_field: conversations\.json: conversation 2: its parents make a cycle$/],
    'not an array'                 => [$notarray, qr/^svc: invalid_field: conversations\.json is not an array/],
    'a damaged .zip member'        => [$badcrc, qr/^svc: invalid_field: the zip's conversations\.json (fails its CRC check|does not inflate)/],
    'a .zip claiming 4 GB'         => [$huge, qr/^svc: invalid_field: the zip's conversations\.json is damaged$/],
    'a .zip without the file'      => [$nomember, qr/^svc: invalid_field: the zip holds no conversations\.json$/],
    'a .zip cut short'             => [substr($zipped, 0, length($zipped) - 30), qr/^svc: invalid_field: /],
);
for my $name (sort keys %bad) {
    my $f = "$tmp/bad.json";
    spit($f, $bad{$name}[0]);
    my $b = new_home();
    $r = svc($b, 'import', '--from', 'chatgpt', $f);
    is $r->{rc}, 1, "$name: exit 1";
    like $r->{err}, $bad{$name}[1], "$name: the error says what";
    is scalar(() = $r->{err} =~ /\n/g), 1, "$name: in one line";
    is $r->{out}, '', "$name: no counts";
    ok !-e $b->{root}, "$name: nothing written";
}
$r = svc($h, 'import', '--from', 'chatgpt', "$tmp/missing.json");
is $r->{rc}, 1, 'a missing file: exit 1';
is tree_listing($h->{root}), $before, '... and the root unchanged';
is svc($h, 'import', '--from', 'claude', $fixture)->{rc}, 2, 'another source is a usage error';
is svc($h, 'import', '--from', 'chatgpt', '--overwrite', $fixture)->{rc}, 2, '--overwrite is a usage error';
is svc($h, 'import', '--from', 'chatgpt')->{rc}, 2, 'no FILE is a usage error';

done_testing;
