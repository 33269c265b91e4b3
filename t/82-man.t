#!/usr/bin/perl
# The man pages (SPEC 18, issue 41): svc(1), svc-fcgi(8) and agents.yaml(5) in man/ lint clean
# under `mandoc -T lint`; svc(1) has an entry (`.It Cm NAME SUB`) for every subcommand
# `svc --help` lists and names every option it shows, svc-fcgi(8) every option of
# `svc-fcgi --help`, agents.yaml(5) an entry (`.It Cm KEY`) for every key `svc config keys`
# prints (the settings tables of core/config.c), and no page has an entry for something the
# programs do not have. A failure names the entry to add (docs/TESTING.md, "Coverage tests").
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use SvcTest;

my $repo = SvcTest::repo();
my $B = SvcTest::build();
my %page = map { $_ => SvcTest::read_file("$repo/man/$_") // '' } qw(svc.1 svc-fcgi.8 agents.yaml.5);
ok length $page{$_}, "man/$_ exists" for sort keys %page;

SKIP: {
    skip 'mandoc missing (scripts/install-deps installs it)', 1 unless `command -v mandoc 2>/dev/null`;
    my $lint = `cd '$repo/man' && mandoc -T lint svc.1 svc-fcgi.8 agents.yaml.5 2>&1`;
    # about the system, not these pages: while t/81-deb.t has the package installed, its
    # pages are under /usr/share/man and a mandoc.db made before lacks them
    $lint =~ s/^mandoc: outdated mandoc\.db lacks .*\n//mg;
    is $lint, '', 'mandoc -T lint: clean' or diag $lint;
}

# The words of each `.It Cm ...` line up to the next macro: ".It Cm sessions list Oo" gives
# "sessions list", ".It Cm model.provider Cm echo | openai" gives "model.provider".
sub entries {
    my ($text) = @_;
    my @e;
    for (split /\n/, $text) {
        next unless /^\.It Cm (.*)$/;
        my @w;
        for my $w (split ' ', $1) {
            last if $w =~ /^[A-Z][a-z][a-z]?$/;
            push @w, $w;
        }
        push @e, join ' ', @w;
    }
    return @e;
}

# svc(1): the subcommands of `svc --help`, "svc sessions list ...", "svc config check|show"
my $help = `'$B/svc' --help 2>&1`;
is $? >> 8, 0, 'svc --help';
my (%sub, %opt, $cmd);
for my $line (split /\n/, $help) {
    if ($line =~ /^\s+svc (\w[\w-]*)(?: ([a-z][\w-]*(?:\|[a-z][\w-]*)*)(?=\s|$))?/) {
        my $subs = $2;
        $cmd = $1;
        $sub{$subs ? "$cmd $_" : $cmd} = 1 for $subs ? split(/\|/, $subs) : (undef);
    } elsif ($line !~ /^\s+\[/) { # not the continuation of the command above
        undef $cmd;
    }
    next unless $cmd;
    $opt{$_} = $cmd for $line =~ /(--[a-z][\w-]*)/g;
}
ok scalar(keys %sub) >= 15, scalar(keys %sub) . ' subcommands in svc --help' or diag $help;
my %entry = map { $_ => 1 } entries($page{'svc.1'});
for my $s (sort keys %sub) {
    my ($cmd, $rest) = split / /, $s, 2;
    ok $entry{$s} || (!defined $rest && grep { /^\Q$cmd\E( |$)/ } keys %entry),
        "svc(1) has an entry for `svc $s`"
        or diag "add `.It Cm $s ...` to the COMMANDS list of man/svc.1";
}
for my $e (sort keys %entry) {
    my ($cmd) = split / /, $e;
    ok $sub{$e} || $sub{$cmd}, "svc(1)'s entry `$e` is a subcommand of svc --help"
        or diag "svc --help has no `svc $e`: remove or rename its entry in man/svc.1";
}
for my $o (sort keys %opt) {
    (my $fl = $o) =~ s/^-//;
    like $page{'svc.1'}, qr/\bFl \Q$fl\E\b/, "svc(1) names $o (svc $opt{$o})"
        or diag "add `Fl $fl` to the entry of `svc $opt{$o}` in man/svc.1";
}

# svc-fcgi(8): the options of `svc-fcgi --help`
my $fhelp = `'$B/svc-fcgi' --help 2>&1`;
my %fopt = map { $_ => 1 } $fhelp =~ /(--[a-z][\w-]*)/g;
ok scalar(keys %fopt) >= 8, 'options in svc-fcgi --help' or diag $fhelp;
for my $o (sort keys %fopt) {
    (my $fl = $o) =~ s/^-//;
    like $page{'svc-fcgi.8'}, qr/^\.It Fl \Q$fl\E\b/m, "svc-fcgi(8) has an entry for $o"
        or diag "add `.It Fl $fl ...` to the options of man/svc-fcgi.8";
}

# agents.yaml(5): every key of the settings tables, through the program
my $home = SvcTest->make_home('');
my $keys = `SVC_HOME='$home' SVC_CONFIG='$home/agents.yaml' '$B/svc' config keys 2>&1`;
is $? >> 8, 0, 'svc config keys' or diag $keys;
my @keys = split /\n/, $keys;
ok @keys >= 60, scalar(@keys) . ' keys';
my %kentry = map { $_ => 1 } entries($page{'agents.yaml.5'});
for my $k (@keys) {
    ok $kentry{$k}, "agents.yaml(5) has an entry for $k"
        or diag "add `.It Cm $k ...` (type, range, default, meaning) to man/agents.yaml.5";
}
my %key = map { $_ => 1 } @keys;
for my $e (sort keys %kentry) {
    ok $key{$e}, "agents.yaml(5)'s entry $e is a key of svc config keys"
        or diag "no setting $e: remove or rename its entry in man/agents.yaml.5";
}

# the guides point to the pages
for my $doc (qw(README docs/OPS.md)) {
    my $t = SvcTest::read_file("$repo/$doc") // '';
    ok index($t, $_) >= 0, "$doc points to $_" for qw[svc(1) svc-fcgi(8) agents.yaml(5)];
}
done_testing;
