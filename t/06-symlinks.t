#!/usr/bin/perl
# No path derived from a request leaves the root: symbolic links inside a session directory
# (agents/, the agent directory, messages/, svc_turns.jsonl, a message file) are refused,
# never followed, for runs and for reads; nothing is written outside the root.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use File::Temp ();
use File::Path qw(make_path);
use File::Find ();
use SvcCliTest;

sub outside_files {
    my ($dir) = @_;
    my @f;
    File::Find::find({ no_chdir => 1, wanted => sub { push @f, $_ if -f $_ } }, $dir);
    return @f;
}

my %cases = (
    'agents dir'    => sub { my ($d, $out) = @_; symlink($out, "$d/agents") or die },
    'agent dir'     => sub { my ($d, $out) = @_; make_path("$d/agents"); symlink($out, "$d/agents/agent_svc-agent") or die },
    'messages dir'  => sub { my ($d, $out) = @_; make_path("$d/agents/agent_svc-agent"); symlink($out, "$d/agents/agent_svc-agent/messages") or die },
    'turns file'    => sub { my ($d, $out) = @_; spit("$out/victim", ''); symlink("$out/victim", "$d/svc_turns.jsonl") or die },
);
for my $name (sort keys %cases) {
    my $h = new_home();
    my $out = File::Temp::tempdir('svc-out-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    my $d = native_dir($h, 'sym');
    make_path($d);
    $cases{$name}->($d, $out);
    my @before = outside_files($out);
    my $before_victim = -f "$out/victim" ? -s "$out/victim" : -1;
    my $r = svc($h, 'chat', 'sym', 'hello');
    is($r->{rc}, 1, "$name: chat refused");
    like($r->{err}, qr/io_error: .*symbolic link.*refused/, "$name: says why");
    is_deeply([outside_files($out)], \@before, "$name: nothing new outside the root");
    is((-f "$out/victim" ? -s "$out/victim" : -1), $before_victim, "$name: nothing appended outside");
    $r = svc($h, 'sessions', 'messages', 'sym');
    is($r->{rc}, 1, "$name: messages refused");
    $r = svc($h, 'sessions', 'show', 'sym');
    is($r->{rc}, 1, "$name: show refused");
}

# a message file that is a link is never read through
{
    my $h = new_home();
    is(svc($h, 'chat', 'ml', 'real text')->{rc}, 0, 'a normal turn');
    my $out = File::Temp::tempdir('svc-out-XXXXXX', TMPDIR => 1, CLEANUP => 1);
    spit("$out/secret.json", '{"message":{"role":"user","content":[{"text":"SECRET OUTSIDE"}]},'
        . '"message_id":2,"redact_message":null,"created_at":"2026-01-01T00:00:00+00:00",'
        . '"updated_at":"2026-01-01T00:00:00+00:00"}');
    symlink("$out/secret.json", msg_dir($h, 'ml') . '/message_2.json') or die;
    my $r = svc($h, 'sessions', 'messages', 'ml');
    is($r->{rc}, 0, 'messages still answers');
    unlike($r->{out}, qr/SECRET OUTSIDE/, 'the linked file is not read');
    like($r->{out}, qr/symbolic link/, 'its row says why');
}

done_testing();
