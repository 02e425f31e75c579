export type Operation = 'select' | 'insert' | 'update' | 'delete';
export type PolicyMode = 'allow' | 'deny';
/** A value in a condition: a literal, or the subject's user id. */
export type Value = string | number | boolean | {
    $var: 'user_id';
};
/** One comparison on one column. */
export type Predicate = {
    op: '$eq' | '$ne' | '$gt' | '$gte' | '$lt' | '$lte';
    value: Value;
} | {
    op: '$in';
    values: Value[];
} | {
    op: '$null';
    value: boolean;
};
/** A normalised condition: every field's predicates are AND-ed, and so are the fields. */
export interface Condition {
    [field: string]: Predicate[];
}
export interface Policy {
    id: string;
    name: string;
    policy_group_id: string;
    mode: PolicyMode;
    table_name: string;
    operation: Operation;
    /** Stored in the normalised form that `parseCondition` returns, or null for "every row". */
    condition: unknown;
}
export interface PolicyGroup {
    id: string;
    user_ids: string[];
    stf_ids: string[];
}
/** Interactive calls and instant-run act as the user; workflow steps act as the STF. */
export type Subject = {
    kind: 'user';
    userId: string;
} | {
    kind: 'stf';
    stfId: string;
    userId: string | null;
};
/** The row filter of an allowed request: (OR of allows) AND NOT (OR of denies); null means TRUE. */
export interface Filter {
    /** Null when some allow has no condition (TRUE). */
    anyOf: Condition[] | null;
    noneOf: Condition[];
}
export type Decision = {
    allowed: true;
    filter: Filter | null;
} | {
    allowed: false;
    reason: 'no_allow';
} | {
    allowed: false;
    reason: 'deny_matched';
    policy: string;
};
