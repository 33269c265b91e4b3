#!/usr/bin/perl
# A title search (q=) of the listing database (core/listdb.c fts_phrase) takes one of two
# paths: few matches are found through the trigram table and sorted, many by walking the
# rows in listing order. SVC_TEST_FTS_FEW=6 moves the border between them to six titles so
# that a small root takes both (a word in 3 titles, in 5, in 17; each alone and with the
# other filters); whichever path a query takes, every page, cursor after cursor, equals the
# titles that contain it (folded) in the unfiltered listing's order.
use strict;
use warnings;
use utf8;
use lib 't/lib';
use Test::More;
use JSON::PP;
use Encode qw(encode_utf8);
use SvcTest;

binmode Test::More->builder->$_, ':encoding(UTF-8)' for qw(output failure_output todo_output);

plan skip_all => 'needs test hooks (make TEST_HOOKS=1)' unless SvcTest->test_hooks_built;
my $s = SvcTest->start(workers => 2, config => "sessions:\n  index_db: true\n",
                       env => { SVC_TEST_FTS_FEW => 6 });
my $api = '/api/v1/chat/sessions';

sub enc { join '', map { /[A-Za-z0-9_.~-]/ ? $_ : sprintf '%%%02X', ord } split //, encode_utf8($_[0]) }

# Every page of a listing (3 a page, archived included unless $extra says), as
# [sid, title, archived, pinned, status].
sub listing {
    my ($extra) = @_;
    my (@rows, $cursor);
    for (1 .. 100) {
        my $q = "$api?limit=3" . ($extra // '&include_archived=true');
        $q .= "&cursor=$cursor" if defined $cursor;
        my $r = $s->req(GET => $q);
        return "status $r->{status}: $r->{body}" unless $r->{status} == 200 && $r->{json};
        push @rows, map { [$_->{session_id}, $_->{title}, $_->{archived} ? 1 : 0,
                           $_->{pinned} ? 1 : 0, $_->{status}] } @{ $r->{json}{sessions} };
        $cursor = $r->{json}{next_cursor} // last;
    }
    return \@rows;
}

# 17 titles say "alpha", 5 "mango", 3 "kiwi", one "Crème BRÛLÉE", interleaved in time.
my @titles;
for my $i (1 .. 26) {
    my $t = $i <= 18 ? sprintf('Common alpha topic %02d', $i) : "plain $i";
    $t .= ' with mango' if $i % 5 == 0;
    $t = "Rare kiwi $i" if $i == 7 || $i == 21;
    $t = 'kiwi 9 and taxi 7' if $i == 24; # both trigrams of "wi 7", not "wi 7"
    $t = 'Crème BRÛLÉE tonight' if $i == 22;
    push @titles, $t;
    my $sid = sprintf 'ts-%02d', $i;
    my $r = $s->req(POST => '/api/chat', body => { session_id => $sid, message => "hello $i" });
    is $r->{status}, 200, "turn on $sid" if $i == 1;
    $r = $s->req(PATCH => "$api/$sid", body => { title => $t, pinned => ($i % 3 == 0 ? JSON::PP::true : JSON::PP::false) });
    die "PATCH $sid: $r->{status} $r->{body}" unless $r->{status} == 200;
}
is $s->req(POST => "$api/ts-04/archive")->{status}, 200, 'archive one alpha';
is $s->req(POST => "$api/ts-21/archive")->{status}, 200, 'archive one kiwi';

my $all = listing();
is scalar(@$all), 26, 'the unfiltered listing has every session';
my %by_title = map { $_ => 1 } map { $_->[1] } @$all;
is_deeply [sort keys %by_title], [sort @titles], '... with the titles set';

# The rows of the unfiltered listing whose title contains $q (case folded, accents kept).
sub expect {
    my ($q, $keep) = @_;
    return [grep { index(lc($_->[1]), lc($q)) >= 0 && (!$keep || $keep->($_)) } @$all];
}

for my $q ('alpha', 'ALPHA', 'alpha topic 1', 'mango', 'with mango', 'kiwi', 'Rare kiwi 7',
           'wi 7', 'brûlée', 'BRÛLÉE', 'brulee', 'ki', 'a', 'opic 0', 'zz9', 'mon alpha topic 05 w') {
    my $n = scalar @{ expect($q) };
    is_deeply listing('&include_archived=true&q=' . enc($q)), expect($q),
        "q=$q: every page equals the unfiltered order's titles that contain it ($n)";
}
is scalar(@{ expect('alpha') }), 17, 'alpha is common (17 titles, SVC_TEST_FTS_FEW is 6)';
is scalar(@{ expect('kiwi') }), 3, 'kiwi is rare';

# the other filters beside a common and a rare word
for my $q ('alpha', 'mango', 'kiwi') {
    is_deeply listing('&q=' . enc($q)), expect($q, sub { !$_[0][2] }),
        "q=$q without the archived";
    is_deeply listing('&archived_only=true&q=' . enc($q)), expect($q, sub { $_[0][2] }),
        "q=$q, archived only";
    is_deeply listing('&include_archived=true&pinned=true&q=' . enc($q)),
        expect($q, sub { $_[0][3] }), "q=$q, pinned only";
    is_deeply listing('&include_archived=true&pinned=false&status=idle&q=' . enc($q)),
        expect($q, sub { !$_[0][3] && $_[0][4] eq 'idle' }), "q=$q, unpinned and idle";
}

unlike $s->log, qr/AddressSanitizer|runtime error/, 'no sanitizer report';
done_testing();
