#!/usr/bin/env python3
"""moto_sts.py - temporary S3 credentials from a moto server that checks them.

    moto_sts.py ENDPOINT BUCKET KEY FILE

ENDPOINT is a moto server started with INITIAL_NO_AUTH_ACTION_COUNT=4: its
first four requests (an IAM user, its access key, its policy, a role) are
not checked, and from then on moto checks every request's signature, and a
temporary key's session token, against what it issued.  The user's keys
then give the role a policy, store FILE as s3://BUCKET/KEY and assume the
role.  Prints shell assignments: USER_KEY, USER_SECRET (long-term keys),
TMP_KEY, TMP_SECRET, TMP_TOKEN (the role's temporary credentials).
"""
import json
import sys

import boto3

ALLOW_ALL = json.dumps({"Version": "2012-10-17",
                        "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]})
TRUST = json.dumps({"Version": "2012-10-17",
                    "Statement": [{"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "sts:AssumeRole"}]})


def main():
    ep, bucket, key, path = sys.argv[1:5]
    kw = {"endpoint_url": ep, "region_name": "us-east-1"}
    # Any keys sign the first four: moto routes by the signature's service but checks nothing yet.
    iam = boto3.client("iam", aws_access_key_id="AKIASETUP", aws_secret_access_key="setup", **kw)
    iam.create_user(UserName="quash")
    ak = iam.create_access_key(UserName="quash")["AccessKey"]
    iam.put_user_policy(UserName="quash", PolicyName="all", PolicyDocument=ALLOW_ALL)
    role = iam.create_role(RoleName="reader", AssumeRolePolicyDocument=TRUST)["Role"]
    user = {"aws_access_key_id": ak["AccessKeyId"], "aws_secret_access_key": ak["SecretAccessKey"]}
    boto3.client("iam", **kw, **user).put_role_policy(RoleName="reader", PolicyName="all",
                                                      PolicyDocument=ALLOW_ALL)
    s3 = boto3.client("s3", **kw, **user)
    s3.create_bucket(Bucket=bucket)
    with open(path, "rb") as f:
        s3.put_object(Bucket=bucket, Key=key, Body=f.read())
    c = boto3.client("sts", **kw, **user).assume_role(RoleArn=role["Arn"], RoleSessionName="quash")["Credentials"]
    print(f"USER_KEY={ak['AccessKeyId']} USER_SECRET={ak['SecretAccessKey']}")
    print(f"TMP_KEY={c['AccessKeyId']} TMP_SECRET={c['SecretAccessKey']} TMP_TOKEN={c['SessionToken']}")


if __name__ == "__main__":
    main()
