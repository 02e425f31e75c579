/** Row-level operations a policy can cover. */
export type Operation = 'select' | 'insert' | 'update' | 'delete';
export type PolicyMode = 'allow' | 'deny';

export type Scalar = string | number | boolean;
/** The subject's user id; `"$user_id"` and `{"$var":"user_id"}` both parse to this. */
export type UserIdVar = { $var: 'user_id' };
export type ConditionValue = Scalar | UserIdVar;

export type CompareOperator = '$eq' | '$ne' | '$gt' | '$gte' | '$lt' | '$lte';

/** The normalised condition on one column: at least one operator, all ANDed. */
export type FieldCondition = { [K in CompareOperator]?: ConditionValue } & {
  $in?: ConditionValue[];
  $null?: boolean;
};

/** A normalised modql condition (column → field condition, all ANDed); `{}` is TRUE. Valid input to `parseCondition`. */
export type Condition = Record<string, FieldCondition>;

export interface Policy {
  id: string;
  name: string;
  policy_group_id: string;
  mode: PolicyMode;
  table_name: string;
  operation: Operation;
  condition: Condition | null;
}

export interface PolicyGroup {
  id: string;
  user_ids: string[];
  stf_ids: string[];
}

/** For an STF, `userId` is the user who executed the workflow, or null when the run was anonymous. */
export type Subject = { kind: 'user'; userId: string } | { kind: 'stf'; stfId: string; userId: string | null };

/** A row filter over the columns of one table. Where a `Filter | null` is expected, null is TRUE. */
export type Filter =
  | { kind: 'and'; args: Filter[] }
  | { kind: 'or'; args: Filter[] }
  | { kind: 'not'; arg: Filter }
  | { kind: 'compare'; column: string; op: CompareOperator; value: ConditionValue }
  | { kind: 'in'; column: string; values: ConditionValue[] }
  | { kind: 'null'; column: string; isNull: boolean };

export type Denial =
  | { allowed: false; reason: 'deny_matched'; policy: string }
  | { allowed: false; reason: 'no_allow' };

export type Decision = { allowed: true; filter: Filter | null } | Denial;
