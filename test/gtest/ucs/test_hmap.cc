#include <ucs/datastruct/hmap.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

struct entry {
    uint64_t        key;
    ucs_hmap_elem_t hmap_elem;
    int             value;
};

entry *to_entry(ucs_hmap_elem_t *elem)
{
    return (elem == NULL) ? NULL : ucs_container_of(elem, entry, hmap_elem);
}

int entry_equal(const ucs_hmap_elem_t *elem, const void *key, void *arg)
{
    const entry *e = ucs_container_of(elem, const entry, hmap_elem);

    ++*(int*)arg;
    return e->key == *(const uint64_t*)key;
}

class ucs_hmap : public ::testing::Test {
protected:
    void SetUp() override
    {
        m_equal_calls = 0;
        ASSERT_EQ(UCS_OK, ucs_hmap_init(&m_hmap, entry_equal, &m_equal_calls));
    }

    void TearDown() override
    {
        ucs_hmap_cleanup(&m_hmap);
    }

    void insert(entry *e, uint64_t key, int value)
    {
        e->key   = key;
        e->value = value;
        ucs_hmap_insert(&m_hmap, &e->hmap_elem, ucs_hash_u64(key));
    }

    entry *lookup(uint64_t key)
    {
        return to_entry(ucs_hmap_lookup(&m_hmap, ucs_hash_u64(key), &key));
    }

    std::multiset<const entry*> all_entries()
    {
        std::multiset<const entry*> result;
        ucs_hmap_iter_t iter;
        ucs_hmap_elem_t *elem;

        ucs_hmap_for_each(elem, &iter, &m_hmap) {
            result.insert(to_entry(elem));
        }
        return result;
    }

    ucs_hmap_t m_hmap;
    int        m_equal_calls;
};

/* Number of output bits of @a hash_fn that flip when one input bit flips,
 * averaged over inputs; for a good hash every (input, output) bit pair flips
 * with probability close to 1/2. Returns the worst deviation from 1/2. */
template <typename F>
double worst_avalanche_bias(F hash_fn, unsigned input_bits, unsigned samples)
{
    std::mt19937_64 rng(1234);
    std::vector<unsigned> flips(input_bits * 64, 0);

    for (unsigned s = 0; s < samples; ++s) {
        uint64_t x    = rng();
        uint64_t base = hash_fn(x);
        for (unsigned i = 0; i < input_bits; ++i) {
            uint64_t diff = base ^ hash_fn(x ^ (1ull << i));
            for (unsigned j = 0; j < 64; ++j) {
                flips[i * 64 + j] += (diff >> j) & 1;
            }
        }
    }

    double worst = 0;
    for (unsigned count : flips) {
        worst = std::max(worst, std::abs((double)count / samples - 0.5));
    }
    return worst;
}

} // namespace

TEST_F(ucs_hmap, empty_table_finds_nothing)
{
    EXPECT_EQ(0u, ucs_hmap_count(&m_hmap));
    EXPECT_EQ(nullptr, lookup(0));
    EXPECT_EQ(nullptr, lookup(42));
    EXPECT_TRUE(all_entries().empty());
    EXPECT_EQ(0, m_equal_calls);
}

TEST_F(ucs_hmap, inserted_element_is_found_by_key)
{
    entry e;

    insert(&e, 7, 70);
    EXPECT_EQ(1u, ucs_hmap_count(&m_hmap));
    EXPECT_EQ(&e, lookup(7));
    EXPECT_EQ(nullptr, lookup(8));
    EXPECT_EQ(std::multiset<const entry*>({&e}), all_entries());
}

TEST_F(ucs_hmap, removed_element_is_no_longer_found)
{
    entry a, b;

    insert(&a, 1, 10);
    insert(&b, 2, 20);
    EXPECT_EQ(UCS_OK, ucs_hmap_remove(&m_hmap, &a.hmap_elem));
    EXPECT_EQ(nullptr, lookup(1));
    EXPECT_EQ(&b, lookup(2));
    EXPECT_EQ(1u, ucs_hmap_count(&m_hmap));
}

TEST_F(ucs_hmap, removing_absent_element_reports_no_elem)
{
    entry a, b;

    insert(&a, 1, 10);
    b.hmap_elem.hash = a.hmap_elem.hash; /* same bucket, not linked */
    b.hmap_elem.next = NULL;
    EXPECT_EQ(UCS_ERR_NO_ELEM, ucs_hmap_remove(&m_hmap, &b.hmap_elem));
    EXPECT_EQ(UCS_OK, ucs_hmap_remove(&m_hmap, &a.hmap_elem));
    EXPECT_EQ(UCS_ERR_NO_ELEM, ucs_hmap_remove(&m_hmap, &a.hmap_elem));
    EXPECT_EQ(0u, ucs_hmap_count(&m_hmap));
}

TEST_F(ucs_hmap, newest_duplicate_shadows_older_ones)
{
    entry first, second, third;

    insert(&first, 5, 1);
    insert(&second, 5, 2);
    insert(&third, 5, 3);

    uint64_t key = 5;
    EXPECT_EQ(&third, lookup(5));
    ucs_hmap_elem_t *elem = ucs_hmap_lookup_next(&m_hmap, &third.hmap_elem, &key);
    EXPECT_EQ(&second, to_entry(elem));
    elem = ucs_hmap_lookup_next(&m_hmap, elem, &key);
    EXPECT_EQ(&first, to_entry(elem));
    EXPECT_EQ(nullptr, ucs_hmap_lookup_next(&m_hmap, elem, &key));

    EXPECT_EQ(UCS_OK, ucs_hmap_remove(&m_hmap, &third.hmap_elem));
    EXPECT_EQ(&second, lookup(5));
}

TEST_F(ucs_hmap, duplicate_order_survives_growth)
{
    std::vector<entry> fillers(1000);
    entry older, newer;

    insert(&older, 123456, 1);
    insert(&newer, 123456, 2);
    size_t buckets = ucs_hmap_bucket_count(&m_hmap);
    for (size_t i = 0; i < fillers.size(); ++i) {
        insert(&fillers[i], 1000000 + i, (int)i);
    }
    ASSERT_GT(ucs_hmap_bucket_count(&m_hmap), buckets);

    uint64_t key = 123456;
    EXPECT_EQ(&newer, lookup(key));
    EXPECT_EQ(&older, to_entry(ucs_hmap_lookup_next(&m_hmap, &newer.hmap_elem,
                                                    &key)));
}

TEST_F(ucs_hmap, growth_keeps_load_factor_at_most_three_quarters)
{
    std::vector<entry> entries(5000);

    for (size_t i = 0; i < entries.size(); ++i) {
        insert(&entries[i], i * 7919, (int)i);
        size_t buckets = ucs_hmap_bucket_count(&m_hmap);
        ASSERT_EQ(0u, buckets & (buckets - 1)) << "not a power of two";
        ASSERT_LE(ucs_hmap_count(&m_hmap) * 4, buckets * 3) << "at " << i;
    }
    for (size_t i = 0; i < entries.size(); ++i) {
        ASSERT_EQ(&entries[i], lookup(i * 7919)) << i;
    }
}

TEST_F(ucs_hmap, equality_callback_separates_keys_with_equal_hashes)
{
    entry a, b, c;
    uint64_t key;

    /* Every element gets the same hash: only the callback tells them apart. */
    a.key = 1;
    b.key = 2;
    c.key = 3;
    ucs_hmap_insert(&m_hmap, &a.hmap_elem, 99);
    ucs_hmap_insert(&m_hmap, &b.hmap_elem, 99);
    ucs_hmap_insert(&m_hmap, &c.hmap_elem, 99);

    key = 1;
    EXPECT_EQ(&a, to_entry(ucs_hmap_lookup(&m_hmap, 99, &key)));
    key = 3;
    EXPECT_EQ(&c, to_entry(ucs_hmap_lookup(&m_hmap, 99, &key)));
    key = 4;
    EXPECT_EQ(nullptr, to_entry(ucs_hmap_lookup(&m_hmap, 99, &key)));
}

TEST_F(ucs_hmap, callback_is_not_called_for_different_hashes)
{
    std::vector<entry> entries(200);

    for (size_t i = 0; i < entries.size(); ++i) {
        insert(&entries[i], i, 0);
    }
    m_equal_calls = 0;
    for (size_t i = 0; i < entries.size(); ++i) {
        EXPECT_EQ(&entries[i], lookup(i));
    }
    /* Stored hashes are compared first: exactly one callback per lookup. */
    EXPECT_EQ(200, m_equal_calls);
}

TEST_F(ucs_hmap, aligned_pointer_hashes_spread_across_buckets)
{
    std::vector<entry> entries(3000);
    size_t longest = 0;

    /* A raw page-aligned address has its low 12 bits zero; the table must
     * still use all buckets. */
    for (size_t i = 0; i < entries.size(); ++i) {
        entries[i].key = 0x7f0000000000ull + (i << 12);
        ucs_hmap_insert(&m_hmap, &entries[i].hmap_elem, entries[i].key);
    }
    for (size_t b = 0; b < ucs_hmap_bucket_count(&m_hmap); ++b) {
        size_t length = 0;
        for (ucs_hmap_elem_t *e = m_hmap.buckets[b]; e != NULL; e = e->next) {
            ++length;
        }
        longest = std::max(longest, length);
    }
    EXPECT_LE(longest, 12u);
}

TEST_F(ucs_hmap, iteration_visits_every_element_once)
{
    std::vector<entry> entries(300);
    std::multiset<const entry*> expected;

    for (size_t i = 0; i < entries.size(); ++i) {
        insert(&entries[i], i % 100, (int)i); /* with duplicates */
        expected.insert(&entries[i]);
    }
    EXPECT_EQ(expected, all_entries());
}

TEST_F(ucs_hmap, removing_current_element_during_iteration_is_safe)
{
    std::vector<entry> entries(500);
    ucs_hmap_iter_t iter;
    ucs_hmap_elem_t *elem;
    size_t visited = 0;

    for (size_t i = 0; i < entries.size(); ++i) {
        insert(&entries[i], i, (int)i);
    }
    ucs_hmap_for_each(elem, &iter, &m_hmap) {
        ++visited;
        if (to_entry(elem)->value % 2 == 0) {
            ASSERT_EQ(UCS_OK, ucs_hmap_remove(&m_hmap, elem));
            elem->next = NULL; /* the iterator must not follow it any more */
        }
    }
    EXPECT_EQ(entries.size(), visited);
    EXPECT_EQ(entries.size() / 2, ucs_hmap_count(&m_hmap));
    for (size_t i = 0; i < entries.size(); ++i) {
        EXPECT_EQ((i % 2) ? &entries[i] : nullptr, lookup(i)) << i;
    }
}

TEST_F(ucs_hmap, random_operations_match_unordered_map)
{
    const size_t key_space = 1500;
    std::vector<entry> pool(key_space);
    std::unordered_map<uint64_t, entry*> model;
    std::mt19937 rng(20240611);

    for (int op = 0; op < 30000; ++op) {
        uint64_t key = rng() % key_space;
        entry *found = lookup(key);
        auto it      = model.find(key);

        ASSERT_EQ((it == model.end()) ? nullptr : it->second, found)
                << "op " << op << " key " << key;

        switch (rng() % 3) {
        case 0: /* insert (keys stay unique: one entry object per key) */
            if (found == NULL) {
                insert(&pool[key], key, op);
                model[key] = &pool[key];
            }
            break;
        case 1: /* remove */
            if (found != NULL) {
                ASSERT_EQ(UCS_OK, ucs_hmap_remove(&m_hmap, &found->hmap_elem));
                model.erase(key);
            }
            break;
        default: /* lookup only */
            break;
        }
        ASSERT_EQ(model.size(), ucs_hmap_count(&m_hmap));
    }

    std::multiset<const entry*> expected;
    for (auto &kv : model) {
        expected.insert(kv.second);
        EXPECT_EQ(kv.first, kv.second->key);
    }
    EXPECT_EQ(expected, all_entries());
}

TEST(ucs_hmap_hash, u64_flips_about_half_the_output_bits_per_input_bit)
{
    double bias = worst_avalanche_bias(ucs_hash_u64, 64, 4000);
    EXPECT_LT(bias, 0.05);
}

TEST(ucs_hmap_hash, u64_has_no_collisions_on_sequential_keys)
{
    std::set<uint64_t> seen;

    for (uint64_t i = 0; i < 50000; ++i) {
        seen.insert(ucs_hash_u64(i));
    }
    EXPECT_EQ(50000u, seen.size());
}

TEST(ucs_hmap_hash, bytes_flips_about_half_the_output_bits_per_input_bit)
{
    /* Embed the 64 varying bits in the middle of a 21-byte buffer, so both
     * the word loop and the tail are exercised. */
    auto hash_fn = [](uint64_t x) {
        uint8_t buf[21] = {};
        memcpy(buf + 9, &x, sizeof(x));
        return ucs_hash_bytes(buf, sizeof(buf), 0);
    };
    EXPECT_LT(worst_avalanche_bias(hash_fn, 64, 4000), 0.05);
}

TEST(ucs_hmap_hash, bytes_result_does_not_depend_on_alignment)
{
    const char text[] = "the quick brown fox jumps over the lazy dog";
    alignas(8) char buf[64];

    for (size_t offset = 0; offset < 8; ++offset) {
        memcpy(buf + offset, text, sizeof(text));
        EXPECT_EQ(ucs_hash_bytes(text, sizeof(text), 3),
                  ucs_hash_bytes(buf + offset, sizeof(text), 3)) << offset;
    }
}

TEST(ucs_hmap_hash, bytes_distinguishes_lengths_of_zero_bytes_and_seeds)
{
    const uint8_t zeros[32] = {};
    std::set<uint64_t> seen;

    for (size_t length = 0; length <= sizeof(zeros); ++length) {
        seen.insert(ucs_hash_bytes(zeros, length, 0));
        seen.insert(ucs_hash_bytes(zeros, length, 1));
    }
    EXPECT_EQ(2 * (sizeof(zeros) + 1), seen.size());
}

TEST(ucs_hmap_hash, string_hash_equals_hash_of_its_bytes)
{
    EXPECT_EQ(ucs_hash_bytes("abc", 3, 0), ucs_hash_string("abc"));
    EXPECT_EQ(ucs_hash_bytes("", 0, 0), ucs_hash_string(""));
    EXPECT_NE(ucs_hash_string("abc"), ucs_hash_string("abd"));
    EXPECT_NE(ucs_hash_string("ab"), ucs_hash_string("ba"));
}

TEST(ucs_hmap_hash, similar_strings_do_not_collide)
{
    std::set<uint64_t> seen;
    char name[32];

    for (int i = 0; i < 50000; ++i) {
        snprintf(name, sizeof(name), "ep_%d", i);
        seen.insert(ucs_hash_string(name));
    }
    EXPECT_EQ(50000u, seen.size());
}
