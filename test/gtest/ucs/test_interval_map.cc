#include <ucs/datastruct/interval_map.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <tuple>
#include <vector>

namespace {

/* One release callback invocation. */
struct release_record {
    uintptr_t start;
    uintptr_t end;
    void      *value;
    unsigned  remaining;

    bool operator==(const release_record &other) const
    {
        return std::tie(start, end, value, remaining) ==
               std::tie(other.start, other.end, other.value, other.remaining);
    }
};

std::ostream &operator<<(std::ostream &os, const release_record &r)
{
    return os << "{[" << r.start << "," << r.end << ") " << r.value << " rem "
              << r.remaining << "}";
}

void record_release(void *arg, uintptr_t start, uintptr_t end, void *value,
                    unsigned remaining)
{
    static_cast<std::vector<release_record>*>(arg)->push_back(
            {start, end, value, remaining});
}

/* (start, end, value) triple for comparing whole-map contents. */
typedef std::tuple<uintptr_t, uintptr_t, void*> range_tuple;

void collect_range(void *arg, const ucs_interval_map_range_t *range)
{
    static_cast<std::vector<range_tuple>*>(arg)->emplace_back(
            range->start, range->end, range->value);
}

void *val(uintptr_t v)
{
    return (void*)(v * 16 + 8);
}

class ucs_interval_map : public ::testing::Test {
protected:
    void SetUp() override
    {
        ASSERT_EQ(UCS_OK, ucs_interval_map_init(&m_map, "test_map"));
    }

    void TearDown() override
    {
        EXPECT_EQ(UCS_OK, ucs_interval_map_check(&m_map));
        ucs_interval_map_cleanup(&m_map, NULL, NULL);
    }

    std::vector<range_tuple> contents()
    {
        std::vector<range_tuple> result;
        ucs_interval_map_for_each(&m_map, collect_range, &result);
        return result;
    }

    std::vector<release_record> remove(uintptr_t start, uintptr_t end)
    {
        std::vector<release_record> records;
        EXPECT_EQ(UCS_OK, ucs_interval_map_remove_range(&m_map, start, end,
                                                        record_release,
                                                        &records));
        EXPECT_EQ(UCS_OK, ucs_interval_map_check(&m_map));
        return records;
    }

    ucs_interval_map_result_t classify(uintptr_t addr, size_t length)
    {
        return ucs_interval_map_lookup_range(&m_map, addr, length, NULL);
    }

    ucs_interval_map_t m_map;
};

/* Reference model: start -> (end, value), with the semantics spelled out
 * the simplest way possible. */
class model_map {
public:
    ucs_status_t insert(uintptr_t start, uintptr_t end, void *value)
    {
        if (start >= end) {
            return UCS_ERR_INVALID_PARAM;
        }
        for (auto &kv : m_ranges) {
            if ((kv.first < end) && (start < kv.second.first)) {
                return UCS_ERR_ALREADY_EXISTS;
            }
        }
        m_ranges[start] = {end, value};
        return UCS_OK;
    }

    std::vector<release_record> remove(uintptr_t start, uintptr_t end)
    {
        std::vector<release_record> records;
        std::map<uintptr_t, std::pair<uintptr_t, void*>> result;

        for (auto &kv : m_ranges) {
            uintptr_t s = kv.first, e = kv.second.first;
            void *v     = kv.second.second;
            if ((e <= start) || (s >= end)) {
                result[s] = kv.second;
                continue;
            }
            unsigned remaining = 0;
            if (s < start) {
                result[s] = {start, v};
                ++remaining;
            }
            if (e > end) {
                result[end] = {e, v};
                ++remaining;
            }
            records.push_back({std::max(s, start), std::min(e, end), v,
                               remaining});
        }
        m_ranges.swap(result);
        return records;
    }

    void *lookup(uintptr_t addr) const
    {
        for (auto &kv : m_ranges) {
            if ((kv.first <= addr) && (addr < kv.second.first)) {
                return kv.second.second;
            }
        }
        return NULL;
    }

    ucs_interval_map_result_t lookup_range(uintptr_t addr, size_t length) const
    {
        uintptr_t end = addr + length;
        int overlaps  = 0;

        for (auto &kv : m_ranges) {
            if ((kv.first < end) && (addr < kv.second.first)) {
                if ((kv.first <= addr) && (end <= kv.second.first)) {
                    return UCS_INTERVAL_MAP_HIT;
                }
                ++overlaps;
            }
        }
        return overlaps ? UCS_INTERVAL_MAP_SPANS : UCS_INTERVAL_MAP_MISS;
    }

    std::vector<range_tuple> contents() const
    {
        std::vector<range_tuple> result;
        for (auto &kv : m_ranges) {
            result.emplace_back(kv.first, kv.second.first, kv.second.second);
        }
        return result;
    }

    size_t size() const
    {
        return m_ranges.size();
    }

private:
    std::map<uintptr_t, std::pair<uintptr_t, void*>> m_ranges;
};

} // namespace

TEST_F(ucs_interval_map, empty_map_misses_everything)
{
    EXPECT_EQ(0u, ucs_interval_map_count(&m_map));
    EXPECT_EQ(nullptr, ucs_interval_map_lookup(&m_map, 0));
    EXPECT_EQ(nullptr, ucs_interval_map_lookup(&m_map, UINTPTR_MAX));
    EXPECT_EQ(UCS_INTERVAL_MAP_MISS, classify(0, 100));
    EXPECT_EQ(nullptr, ucs_interval_map_first(&m_map));
    EXPECT_EQ(nullptr, ucs_interval_map_lower_bound(&m_map, 0));
    EXPECT_TRUE(remove(0, 100).empty());
    EXPECT_TRUE(contents().empty());
}

TEST_F(ucs_interval_map, insert_rejects_empty_and_reversed_ranges)
{
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, ucs_interval_map_insert(&m_map, 10, 10, val(1)));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, ucs_interval_map_insert(&m_map, 10, 5, val(1)));
    EXPECT_EQ(0u, ucs_interval_map_count(&m_map));
}

TEST_F(ucs_interval_map, insert_rejects_every_kind_of_overlap)
{
    ASSERT_EQ(UCS_OK, ucs_interval_map_insert(&m_map, 100, 200, val(1)));

    EXPECT_EQ(UCS_ERR_ALREADY_EXISTS, ucs_interval_map_insert(&m_map, 100, 200, val(2)));
    EXPECT_EQ(UCS_ERR_ALREADY_EXISTS, ucs_interval_map_insert(&m_map, 120, 130, val(2)));
    EXPECT_EQ(UCS_ERR_ALREADY_EXISTS, ucs_interval_map_insert(&m_map, 50, 300, val(2)));
    EXPECT_EQ(UCS_ERR_ALREADY_EXISTS, ucs_interval_map_insert(&m_map, 50, 101, val(2)));
    EXPECT_EQ(UCS_ERR_ALREADY_EXISTS, ucs_interval_map_insert(&m_map, 199, 250, val(2)));
    EXPECT_EQ(UCS_ERR_ALREADY_EXISTS, ucs_interval_map_insert(&m_map, 100, 101, val(2)));

    /* Half-open ranges: touching on either side is not an overlap. */
    EXPECT_EQ(UCS_OK, ucs_interval_map_insert(&m_map, 50, 100, val(3)));
    EXPECT_EQ(UCS_OK, ucs_interval_map_insert(&m_map, 200, 250, val(4)));
    EXPECT_EQ(3u, ucs_interval_map_count(&m_map));
    EXPECT_EQ(std::vector<range_tuple>({range_tuple(50, 100, val(3)),
                                        range_tuple(100, 200, val(1)),
                                        range_tuple(200, 250, val(4))}),
              contents());
}

TEST_F(ucs_interval_map, lookup_finds_containing_range_with_exclusive_end)
{
    ASSERT_EQ(UCS_OK, ucs_interval_map_insert(&m_map, 0x1000, 0x2000, val(1)));
    ASSERT_EQ(UCS_OK, ucs_interval_map_insert(&m_map, 0x3000, 0x3001, val(2)));

    EXPECT_EQ(nullptr, ucs_interval_map_lookup(&m_map, 0xfff));
    const ucs_interval_map_range_t *range = ucs_interval_map_lookup(&m_map, 0x1000);
    ASSERT_NE(nullptr, range);
    EXPECT_EQ(0x1000u, range->start);
    EXPECT_EQ(0x2000u, range->end);
    EXPECT_EQ(val(1), range->value);
    EXPECT_EQ(range, ucs_interval_map_lookup(&m_map, 0x1fff));
    EXPECT_EQ(nullptr, ucs_interval_map_lookup(&m_map, 0x2000));
    EXPECT_EQ(nullptr, ucs_interval_map_lookup(&m_map, 0x2fff));
    ASSERT_NE(nullptr, ucs_interval_map_lookup(&m_map, 0x3000));
    EXPECT_EQ(val(2), ucs_interval_map_lookup(&m_map, 0x3000)->value);
    EXPECT_EQ(nullptr, ucs_interval_map_lookup(&m_map, 0x3001));
}

TEST_F(ucs_interval_map, lookup_range_reports_hit_miss_and_spans)
{
    const ucs_interval_map_range_t *range;

    ASSERT_EQ(UCS_OK, ucs_interval_map_insert(&m_map, 100, 200, val(1)));
    ASSERT_EQ(UCS_OK, ucs_interval_map_insert(&m_map, 200, 300, val(2)));
    ASSERT_EQ(UCS_OK, ucs_interval_map_insert(&m_map, 400, 500, val(3)));

    EXPECT_EQ(UCS_INTERVAL_MAP_HIT, ucs_interval_map_lookup_range(&m_map, 120, 10, &range));
    ASSERT_NE(nullptr, range);
    EXPECT_EQ(val(1), range->value);
    EXPECT_EQ(UCS_INTERVAL_MAP_HIT, classify(100, 100));   /* exactly the range */
    EXPECT_EQ(UCS_INTERVAL_MAP_HIT, classify(499, 1));     /* last byte */

    EXPECT_EQ(UCS_INTERVAL_MAP_MISS, ucs_interval_map_lookup_range(&m_map, 0, 100, &range));
    EXPECT_EQ(nullptr, range);
    EXPECT_EQ(UCS_INTERVAL_MAP_MISS, classify(300, 100));  /* the whole hole */
    EXPECT_EQ(UCS_INTERVAL_MAP_MISS, classify(500, 1000)); /* above all */

    EXPECT_EQ(UCS_INTERVAL_MAP_SPANS, ucs_interval_map_lookup_range(&m_map, 150, 100, &range));
    EXPECT_EQ(nullptr, range); /* two adjacent ranges are not one */
    EXPECT_EQ(UCS_INTERVAL_MAP_SPANS, classify(90, 20));   /* hole, then range */
    EXPECT_EQ(UCS_INTERVAL_MAP_SPANS, classify(290, 20));  /* range, then hole */
    EXPECT_EQ(UCS_INTERVAL_MAP_SPANS, classify(350, 100)); /* starts in a hole */
    EXPECT_EQ(UCS_INTERVAL_MAP_SPANS, classify(0, 1000));  /* covers everything */

    EXPECT_EQ(UCS_INTERVAL_MAP_MISS, classify(150, 0));    /* empty query */
}

TEST_F(ucs_interval_map, lookup_range_at_top_of_address_space_does_not_wrap)
{
    ASSERT_EQ(UCS_OK, ucs_interval_map_insert(&m_map, 0, 100, val(1)));
    ASSERT_EQ(UCS_OK, ucs_interval_map_insert(&m_map, UINTPTR_MAX - 100,
                                              UINTPTR_MAX, val(2)));

    /* A wrapped end would look like it ends inside [0, 100). */
    EXPECT_EQ(UCS_INTERVAL_MAP_HIT, classify(UINTPTR_MAX - 50, 1000));
    EXPECT_EQ(UCS_INTERVAL_MAP_SPANS, classify(UINTPTR_MAX - 200, 1000));
    EXPECT_EQ(UCS_INTERVAL_MAP_MISS, classify(UINTPTR_MAX, 10));
    EXPECT_EQ(val(2), ucs_interval_map_lookup(&m_map, UINTPTR_MAX - 1)->value);
}

TEST_F(ucs_interval_map, remove_range_removes_ranges_inside_it)
{
    ASSERT_EQ(UCS_OK, ucs_interval_map_insert(&m_map, 10, 20, val(1)));
    ASSERT_EQ(UCS_OK, ucs_interval_map_insert(&m_map, 30, 40, val(2)));
    ASSERT_EQ(UCS_OK, ucs_interval_map_insert(&m_map, 40, 50, val(3)));
    ASSERT_EQ(UCS_OK, ucs_interval_map_insert(&m_map, 60, 70, val(4)));

    EXPECT_EQ(std::vector<release_record>({{30, 40, val(2), 0},
                                           {40, 50, val(3), 0}}),
              remove(25, 55));
    EXPECT_EQ(std::vector<range_tuple>({range_tuple(10, 20, val(1)),
                                        range_tuple(60, 70, val(4))}),
              contents());
    EXPECT_EQ(2u, ucs_interval_map_count(&m_map));
}

TEST_F(ucs_interval_map, remove_range_trims_ranges_overlapping_its_edges)
{
    ASSERT_EQ(UCS_OK, ucs_interval_map_insert(&m_map, 10, 20, val(1)));
    ASSERT_EQ(UCS_OK, ucs_interval_map_insert(&m_map, 20, 30, val(2)));
    ASSERT_EQ(UCS_OK, ucs_interval_map_insert(&m_map, 30, 40, val(3)));

    EXPECT_EQ(std::vector<release_record>({{15, 20, val(1), 1},
                                           {20, 30, val(2), 0},
                                           {30, 35, val(3), 1}}),
              remove(15, 35));
    EXPECT_EQ(std::vector<range_tuple>({range_tuple(10, 15, val(1)),
                                        range_tuple(35, 40, val(3))}),
              contents());
    /* The trimmed-off addresses are really gone, the kept ones are found. */
    EXPECT_EQ(nullptr, ucs_interval_map_lookup(&m_map, 15));
    EXPECT_EQ(nullptr, ucs_interval_map_lookup(&m_map, 34));
    EXPECT_EQ(val(3), ucs_interval_map_lookup(&m_map, 35)->value);
}

TEST_F(ucs_interval_map, removing_exact_range_removes_it)
{
    ASSERT_EQ(UCS_OK, ucs_interval_map_insert(&m_map, 10, 20, val(1)));
    EXPECT_EQ(std::vector<release_record>({{10, 20, val(1), 0}}), remove(10, 20));
    EXPECT_EQ(0u, ucs_interval_map_count(&m_map));
}

TEST_F(ucs_interval_map, split_keeps_value_on_both_sides)
{
    ASSERT_EQ(UCS_OK, ucs_interval_map_insert(&m_map, 100, 200, val(7)));

    EXPECT_EQ(std::vector<release_record>({{140, 160, val(7), 2}}),
              remove(140, 160));
    EXPECT_EQ(std::vector<range_tuple>({range_tuple(100, 140, val(7)),
                                        range_tuple(160, 200, val(7))}),
              contents());
    EXPECT_EQ(2u, ucs_interval_map_count(&m_map));
    EXPECT_EQ(UCS_INTERVAL_MAP_SPANS, classify(130, 40));
    EXPECT_EQ(UCS_INTERVAL_MAP_MISS, classify(140, 20));
}

TEST_F(ucs_interval_map, remove_range_in_a_hole_changes_nothing)
{
    ASSERT_EQ(UCS_OK, ucs_interval_map_insert(&m_map, 10, 20, val(1)));
    ASSERT_EQ(UCS_OK, ucs_interval_map_insert(&m_map, 30, 40, val(2)));
    EXPECT_TRUE(remove(20, 30).empty());
    EXPECT_TRUE(remove(0, 10).empty());
    EXPECT_TRUE(remove(40, 1000).empty());
    EXPECT_EQ(2u, ucs_interval_map_count(&m_map));
}

TEST_F(ucs_interval_map, remove_range_rejects_empty_range)
{
    ASSERT_EQ(UCS_OK, ucs_interval_map_insert(&m_map, 10, 20, val(1)));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              ucs_interval_map_remove_range(&m_map, 15, 15, NULL, NULL));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              ucs_interval_map_remove_range(&m_map, 16, 15, NULL, NULL));
    EXPECT_EQ(1u, ucs_interval_map_count(&m_map));
}

TEST_F(ucs_interval_map, iteration_is_in_address_order)
{
    std::vector<uintptr_t> starts;
    std::mt19937 rng(7);

    for (uintptr_t i = 0; i < 200; ++i) {
        starts.push_back(i * 10);
    }
    std::shuffle(starts.begin(), starts.end(), rng);
    for (uintptr_t s : starts) {
        ASSERT_EQ(UCS_OK, ucs_interval_map_insert(&m_map, s, s + 5, val(s)));
    }

    uintptr_t expected = 0;
    for (const ucs_interval_map_range_t *r = ucs_interval_map_first(&m_map);
         r != NULL; r = ucs_interval_map_next(&m_map, r)) {
        EXPECT_EQ(expected, r->start);
        EXPECT_EQ(val(expected), r->value);
        expected += 10;
    }
    EXPECT_EQ(2000u, expected);

    std::vector<range_tuple> all = contents();
    ASSERT_EQ(200u, all.size());
    EXPECT_TRUE(std::is_sorted(all.begin(), all.end()));
}

TEST_F(ucs_interval_map, lower_bound_returns_containing_or_following_range)
{
    ASSERT_EQ(UCS_OK, ucs_interval_map_insert(&m_map, 10, 20, val(1)));
    ASSERT_EQ(UCS_OK, ucs_interval_map_insert(&m_map, 30, 40, val(2)));

    EXPECT_EQ(val(1), ucs_interval_map_lower_bound(&m_map, 0)->value);
    EXPECT_EQ(val(1), ucs_interval_map_lower_bound(&m_map, 19)->value);
    EXPECT_EQ(val(2), ucs_interval_map_lower_bound(&m_map, 20)->value);
    EXPECT_EQ(val(2), ucs_interval_map_lower_bound(&m_map, 35)->value);
    EXPECT_EQ(nullptr, ucs_interval_map_lower_bound(&m_map, 40));
}

TEST_F(ucs_interval_map, ranges_can_be_removed_while_iterating)
{
    for (uintptr_t i = 0; i < 50; ++i) {
        ASSERT_EQ(UCS_OK, ucs_interval_map_insert(&m_map, i * 10, i * 10 + 10,
                                                  val(i)));
    }

    const ucs_interval_map_range_t *r, *next;
    size_t visited = 0;
    for (r = ucs_interval_map_first(&m_map); r != NULL; r = next) {
        next = ucs_interval_map_next(&m_map, r);
        if ((r->start / 10) % 2 == 0) {
            ASSERT_EQ(UCS_OK, ucs_interval_map_remove_range(&m_map, r->start,
                                                            r->end, NULL,
                                                            NULL));
        }
        ++visited;
    }
    EXPECT_EQ(50u, visited);
    EXPECT_EQ(25u, ucs_interval_map_count(&m_map));
    for (const range_tuple &t : contents()) {
        EXPECT_EQ(1u, (std::get<0>(t) / 10) % 2);
    }
}

TEST_F(ucs_interval_map, range_pointers_stay_valid_when_others_are_removed)
{
    std::vector<const ucs_interval_map_range_t*> kept;

    for (uintptr_t i = 0; i < 64; ++i) {
        ASSERT_EQ(UCS_OK, ucs_interval_map_insert(&m_map, i * 2, i * 2 + 1,
                                                  val(i)));
    }
    for (uintptr_t i = 0; i < 64; i += 4) {
        kept.push_back(ucs_interval_map_lookup(&m_map, i * 2));
    }
    /* Remove every other range: many rebalancing operations. */
    for (uintptr_t i = 1; i < 64; i += 2) {
        remove(i * 2, i * 2 + 1);
    }
    for (size_t k = 0; k < kept.size(); ++k) {
        EXPECT_EQ(k * 8, kept[k]->start);
        EXPECT_EQ(kept[k], ucs_interval_map_lookup(&m_map, k * 8));
    }
}

TEST_F(ucs_interval_map, tree_stays_balanced_under_sequential_inserts)
{
    for (uintptr_t i = 0; i < 4096; ++i) {
        ASSERT_EQ(UCS_OK, ucs_interval_map_insert(&m_map, i * 4, i * 4 + 4,
                                                  val(i)));
    }
    /* Ascending inserts degenerate an unbalanced tree into a list; the
     * check verifies the height invariant at every node. */
    ASSERT_EQ(UCS_OK, ucs_interval_map_check(&m_map));
    remove(4, 4 * 4095);
    EXPECT_EQ(2u, ucs_interval_map_count(&m_map));
}

TEST_F(ucs_interval_map, cleanup_reports_every_range_once_in_order)
{
    std::vector<release_record> records;
    ucs_interval_map_t map;

    ASSERT_EQ(UCS_OK, ucs_interval_map_init(&map, "cleanup"));
    ASSERT_EQ(UCS_OK, ucs_interval_map_insert(&map, 30, 40, val(3)));
    ASSERT_EQ(UCS_OK, ucs_interval_map_insert(&map, 10, 20, val(1)));
    ASSERT_EQ(UCS_OK, ucs_interval_map_insert(&map, 20, 30, val(2)));
    ucs_interval_map_cleanup(&map, record_release, &records);
    EXPECT_EQ(std::vector<release_record>({{10, 20, val(1), 0},
                                           {20, 30, val(2), 0},
                                           {30, 40, val(3), 0}}),
              records);
}

TEST_F(ucs_interval_map, release_callback_supports_value_refcounting)
{
    /* The user keeps one reference per range referring to a value; the
     * callback's "remaining" count is all it needs to keep that exact. */
    struct refcounted {
        int refs;
    } objs[3] = {{0}, {0}, {0}};
    auto release = [](void *arg, uintptr_t start, uintptr_t end, void *value,
                      unsigned remaining) {
        static_cast<refcounted*>(value)->refs += (int)remaining - 1;
    };

    for (int i = 0; i < 3; ++i) {
        ASSERT_EQ(UCS_OK, ucs_interval_map_insert(&m_map, i * 100,
                                                  i * 100 + 100, &objs[i]));
        ++objs[i].refs;
    }

    ASSERT_EQ(UCS_OK, ucs_interval_map_remove_range(&m_map, 10, 20, release,
                                                    NULL)); /* split */
    EXPECT_EQ(2, objs[0].refs);
    ASSERT_EQ(UCS_OK, ucs_interval_map_remove_range(&m_map, 50, 250, release,
                                                    NULL));
    EXPECT_EQ(2, objs[0].refs); /* trimmed: still two pieces */
    EXPECT_EQ(0, objs[1].refs); /* gone */
    EXPECT_EQ(1, objs[2].refs); /* trimmed */
    ASSERT_EQ(UCS_OK, ucs_interval_map_remove_range(&m_map, 0, 300, release,
                                                    NULL));
    EXPECT_EQ(0, objs[0].refs);
    EXPECT_EQ(0, objs[2].refs);
    EXPECT_EQ(0u, ucs_interval_map_count(&m_map));
}

TEST_F(ucs_interval_map, random_operations_match_std_map)
{
    const uintptr_t space = 3000;
    model_map model;
    std::mt19937 rng(20240611);

    for (int op = 0; op < 6000; ++op) {
        uintptr_t start = rng() % space;
        uintptr_t len   = 1 + rng() % ((rng() % 4 == 0) ? 300 : 40);
        uintptr_t end   = start + len;
        unsigned choice = rng() % 10;

        if (choice < 5) {
            void *value = val(op);
            ASSERT_EQ(model.insert(start, end, value),
                      ucs_interval_map_insert(&m_map, start, end, value))
                    << "op " << op << " insert [" << start << "," << end << ")";
        } else if (choice < 7) {
            std::vector<release_record> records;
            ASSERT_EQ(UCS_OK, ucs_interval_map_remove_range(&m_map, start, end,
                                                            record_release,
                                                            &records));
            ASSERT_EQ(model.remove(start, end), records)
                    << "op " << op << " remove [" << start << "," << end << ")";
        } else {
            ASSERT_EQ(model.lookup_range(start, len),
                      ucs_interval_map_lookup_range(&m_map, start, len, NULL))
                    << "op " << op << " lookup [" << start << "," << end << ")";
            const ucs_interval_map_range_t *r = ucs_interval_map_lookup(&m_map,
                                                                        start);
            ASSERT_EQ(model.lookup(start), (r == NULL) ? NULL : r->value)
                    << "op " << op << " lookup " << start;
        }

        ASSERT_EQ(model.size(), ucs_interval_map_count(&m_map)) << "op " << op;
        if (op % 50 == 0) {
            ASSERT_EQ(UCS_OK, ucs_interval_map_check(&m_map)) << "op " << op;
            ASSERT_EQ(model.contents(), contents()) << "op " << op;
        }
    }
    EXPECT_EQ(model.contents(), contents());
}
